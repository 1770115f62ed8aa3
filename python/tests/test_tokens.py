"""Tokens output from Python: int64 tokens, position ids, loss mask and
cu_seqlens, checked against what the tokens themselves imply."""

import gc

import numpy as np
import pytest

import pagefeed
from conftest import gen

# Ids outside gen's vocabulary (GPT-2's 50,257), so that the tokens alone
# say where every EOS and every pad is.
EOS, PAD = 60000, 60001
SEQ, ROWS = 24, 3
EXTRAS = dict(position_ids=True, cu_seqlens=True, loss_mask=True)


@pytest.fixture(scope="module")
def small(pagefeed_bin, tmp_path_factory):
    """1 file of 300 documents: a few hundred 3×24 batches."""
    return gen(pagefeed_bin, tmp_path_factory.mktemp("small"), files=1, rows=300)


def loader(path, **kw):
    args = dict(columns=["input_ids"], output="tokens", seq_len=SEQ, batch_rows=ROWS, deterministic=True,
                shuffle="none", eos=EOS, pad=PAD)
    args.update(kw)
    return pagefeed.Loader(path, **args)


def expected(tokens, eos, pad):
    """Position ids, loss mask and cu_seqlens of a [rows, seq_len] batch,
    from its tokens: a segment starts at every row's start, after every
    eos and where a run of pad starts; positions count from 0 in each;
    the mask is False exactly on pad; cu_seqlens are the segments'
    cumulative ends over the flattened batch, from 0."""
    rows, seq = tokens.shape
    t = tokens.reshape(-1)
    n = len(t)
    is_pad = t == pad
    start = np.zeros(n, bool)
    start[::seq] = True
    start[1:] |= t[:-1] == eos
    start[1:] |= is_pad[1:] & ~is_pad[:-1]
    idx = np.arange(n)
    pos = idx - np.maximum.accumulate(np.where(start, idx, 0))
    cu = np.append(np.flatnonzero(start), n)
    return pos.reshape(rows, seq), ~is_pad.reshape(rows, seq), cu


def read_all(path, **kw):
    """Every batch's arrays, copied (the batch goes back at once)."""
    out = []
    with loader(path, **kw) as l:
        for b in l:
            with b:
                out.append({k: None if getattr(b, k) is None else getattr(b, k).copy()
                            for k in ("tokens", "position_ids", "loss_mask", "cu_seqlens")})
    assert out
    return out


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("truncate", [False, True])
def test_extras_match_the_tokens(small, dtype, truncate):
    # gen's documents have 24 tokens or more: truncated to 23 and EOS they
    # would fill 24-token rows exactly, so truncate gets longer rows
    seq = 256 if truncate else SEQ
    saw_pad = saw_mid_row = False
    with loader(small, tokens_dtype=dtype, truncate=truncate, seq_len=seq, **EXTRAS) as l:
        for b in l:
            t, pos, mask, cu = b.tokens, b.position_ids, b.loss_mask, b.cu_seqlens
            assert t.dtype == np.dtype(dtype) and t.shape == (ROWS, seq)
            assert pos.dtype == np.int32 and pos.shape == (ROWS, seq)
            assert mask.dtype == np.bool_ and mask.shape == (ROWS, seq)
            assert cu.dtype == np.int32 and cu.ndim == 1
            for a in (t, pos, mask, cu):
                assert not a.flags.writeable and not a.flags.owndata
            want_pos, want_mask, want_cu = expected(t, EOS, PAD)
            assert np.array_equal(pos, want_pos), (t, pos, want_pos)
            assert np.array_equal(mask, want_mask), (t, mask)
            assert np.array_equal(cu, want_cu), (t, cu, want_cu)
            # every row's segments sum to seq_len
            assert np.all(np.isin(np.arange(0, ROWS * seq + 1, seq), cu))
            saw_pad |= bool((~mask[:-1]).any())  # padding before the last row
            saw_mid_row |= bool((cu % seq != 0).any())
            b.release()
    assert saw_pad and saw_mid_row, "no padding or no document boundary inside a row: the check proved little"


def test_int64_tokens_equal_int32(small):
    a = read_all(small)
    b = read_all(small, tokens_dtype="int64", **EXTRAS)
    c = read_all(small, tokens_dtype=np.int64)  # a numpy dtype names it too
    assert len(a) == len(b) == len(c) > 10
    for x, y, z in zip(a, b, c):
        assert x["tokens"].dtype == np.int32 and y["tokens"].dtype == np.int64 == z["tokens"].dtype
        assert np.array_equal(x["tokens"], y["tokens"]) and np.array_equal(y["tokens"], z["tokens"])
        assert x["position_ids"] is None and x["loss_mask"] is None and x["cu_seqlens"] is None
        assert z["position_ids"] is None


@pytest.mark.parametrize("eos,pad", [(0, PAD), (EOS, 0), (0, 0)])
def test_explicit_zero_eos_and_pad(small, eos, pad):
    """0 is an id like any other when given: the batches are those of the
    reference run with EOS and pad replaced, and the boundaries the same."""
    ref = read_all(small, **EXTRAS)
    got = read_all(small, eos=eos, pad=pad, **EXTRAS)
    assert len(ref) == len(got)
    for r, g in zip(ref, got):
        want = r["tokens"].copy()
        want[r["tokens"] == EOS] = eos
        want[r["tokens"] == PAD] = pad
        assert np.array_equal(g["tokens"], want)
        for k in ("position_ids", "loss_mask", "cu_seqlens"):
            assert np.array_equal(g[k], r[k]), k
    # the reference did have both to replace
    allref = np.concatenate([r["tokens"].reshape(-1) for r in ref])
    assert (allref == EOS).any() and (allref == PAD).any()


def test_extras_only_when_asked(small, corpus):
    with loader(small, loss_mask=True) as l:
        b = next(l)
        assert b.tokens.dtype == np.int32 and b.loss_mask is not None
        assert b.position_ids is None and b.cu_seqlens is None
    with pagefeed.Loader(corpus, columns=["id"], batch_rows=10) as l:
        b = next(l)
        assert b.tokens is None and b.position_ids is None and b.loss_mask is None and b.cu_seqlens is None


@pytest.mark.parametrize("kw,msg", [
    (dict(output="tokens", tokens_dtype="float32"), 'tokens_dtype "float32": want "int32" or "int64"'),
    (dict(output="tokens", tokens_dtype=np.float32), 'tokens_dtype "float32"'),
    (dict(output="tokens", tokens_dtype="int"), 'tokens_dtype "int"'),
    (dict(tokens_dtype="int64"), 'tokens_dtype "int64" needs output "tokens"'),
    (dict(cu_seqlens=True), 'cu_seqlens needs output "tokens"'),
    (dict(output="tokens", position_id=True), "position_id"),  # misspelt: an unknown key
])
def test_config_errors(small, kw, msg):
    with pytest.raises(pagefeed.ConfigError) as e:
        pagefeed.Loader(small, columns=["input_ids"], **kw)
    assert msg in str(e.value)


def test_views_keep_the_batch(small):
    """Views of the extras hold the batch's buffer as tokens do: released,
    its buffer is not reused while they live, and the batch goes back when
    the last is garbage. The released batch itself gives no more views."""
    with loader(small, tokens_dtype="int64", **EXTRAS) as l:
        b = next(l)
        views = [b.tokens, b.position_ids, b.loss_mask, b.cu_seqlens]
        want = [v.copy() for v in views]
        b.release()
        assert not b._done
        for name in ("tokens", "position_ids", "loss_mask", "cu_seqlens"):
            with pytest.raises(pagefeed.ClosedError):
                getattr(b, name)
        n = 0
        for other in l:  # the rest of the epoch, its token buffers reused
            other.release()
            n += 1
        assert n > 20
        for v, w in zip(views, want):
            assert np.array_equal(v, w)
        del views, v
        gc.collect()
        assert b._done


@pytest.mark.parametrize("name", ["tokens", "position_ids", "loss_mask", "cu_seqlens"])
def test_one_view_alone_keeps_the_batch(small, name):
    with loader(small, tokens_dtype="int64", **EXTRAS) as l:
        b = next(l)
        v = getattr(b, name)
        want = v.copy()
        del b
        gc.collect()
        for other in l:  # the loader reuses released token buffers; this one is held by v
            other.release()
        assert np.array_equal(v, want)
