// The rows every zoo fixture holds, as plain columns: deterministic in
// (set, base, rows, seed), so a fixture is the same bytes of data whichever
// writer stores it.
//
// Two sets:
//   tokens: id int64, input_ids list<int32>, text string (nullable),
//           score double (nullable)
//   images: id int64, image binary (20 to 300 KB), caption string (nullable)
//
// Every column names its row without the others: id is base+i, input_ids[0]
// is the id and image begins with the id as 8 little-endian bytes. Bases
// differ per fixture, so ids are unique over the whole zoo and a dataset
// that mixes fixtures still names every row by one value.

// rng is mulberry32: small, fast and the same in every JS engine.
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const VOCAB = 50257; // token ids are below this (GPT-2's vocabulary)
export const MAX_TOKENS = 4096;

// tokenLength is heavy-tailed: P(len > x) falls as x^-1.1 (a Pareto tail
// as document lengths have), from 1 to MAX_TOKENS.
function tokenLength(r, maxLen) {
  const u = 1 - r(); // (0, 1]
  return Math.min(maxLen, Math.floor(4 * Math.pow(u, -1 / 1.1)) - 3);
}

// Words of the text columns: ASCII, accents, CJK, emoji outside the BMP,
// and the characters JSON and CSV escape.
const WORDS = ['the', 'page', 'shuffle', 'héllo', 'naïve', '日本語', 'данные', '🎉', '𝄞', 'a"quote', 'back\\slash',
  'tab\there', 'new\nline', 'nul\u0000byte', '', 'comma,', "it's", '<tag>', 'ünïcödé', 'ß'];

function text(r) {
  const n = Math.floor(r() * 24);
  const w = [];
  for (let i = 0; i < n; i++) w.push(WORDS[Math.floor(r() * WORDS.length)]);
  return w.join(' ');
}

// Doubles that writers and readers get wrong: both zeros, infinities, NaN,
// the smallest subnormal and the largest finite value.
const SPECIAL = [0, -0, Infinity, -Infinity, NaN, 5e-324, 1.7976931348623157e308, -2.2250738585072014e-308];

function score(r) {
  const p = r();
  if (p < 0.02) return SPECIAL[Math.floor(r() * SPECIAL.length)];
  return (r() - 0.5) * Math.pow(10, Math.floor(r() * 21) - 10);
}

// tokens returns the tokens set's columns for ids base..base+n-1:
// {id: BigInt64Array, offsets: Int32Array (n+1), values: Int32Array,
// text: (string|null)[], score: (number|null)[]}; lists hold at most
// maxLen tokens.
export function tokens(base, n, seed, maxLen = MAX_TOKENS) {
  const r = rng(seed);
  const id = new BigInt64Array(n);
  const offsets = new Int32Array(n + 1);
  const lens = new Int32Array(n);
  let total = 0;
  for (let i = 0; i < n; i++) {
    lens[i] = tokenLength(r, maxLen);
    total += lens[i];
    offsets[i + 1] = total;
  }
  const values = new Int32Array(total);
  const txt = new Array(n);
  const sc = new Array(n);
  for (let i = 0; i < n; i++) {
    id[i] = BigInt(base + i);
    const o = offsets[i];
    values[o] = base + i;
    for (let j = 1; j < lens[i]; j++) values[o + j] = Math.floor(r() * VOCAB);
    txt[i] = r() < 0.1 ? null : text(r);
    sc[i] = r() < 0.1 ? null : score(r);
  }
  return { id, offsets, values, text: txt, score: sc };
}

export const MIN_IMAGE = 20 << 10;
export const MAX_IMAGE = 300 << 10;

// images returns the images set's columns for ids base..base+n-1:
// {id: BigInt64Array, image: Uint8Array[], caption: (string|null)[]}.
// Image sizes are log-uniform from 20 to 300 KiB (mean about 100 KiB);
// their bytes are random, as compressed images are.
export function images(base, n, seed) {
  const r = rng(seed);
  const id = new BigInt64Array(n);
  const image = new Array(n);
  const caption = new Array(n);
  for (let i = 0; i < n; i++) {
    id[i] = BigInt(base + i);
    const size = Math.floor(MIN_IMAGE * Math.pow(MAX_IMAGE / MIN_IMAGE, r()));
    const b = new Uint8Array(size);
    new DataView(b.buffer).setBigInt64(0, id[i], true);
    const words = new Uint32Array(b.buffer, 0, size >>> 2);
    let s = (Math.floor(r() * 4294967296) | 1) >>> 0;
    for (let k = 2; k < words.length; k++) {
      // xorshift32: the image bytes need speed, not quality
      s ^= s << 13; s >>>= 0;
      s ^= s >>> 17;
      s ^= s << 5; s >>>= 0;
      words[k] = s;
    }
    for (let k = words.length * 4; k < size; k++) b[k] = Math.floor(r() * 256);
    image[i] = b;
    caption[i] = r() < 0.1 ? null : text(r);
  }
  return { id, image, caption };
}

// listAt returns row i's token list as an array (for writers that take
// rows or arrays of arrays).
export function listAt(d, i) {
  return Array.from(d.values.subarray(d.offsets[i], d.offsets[i + 1]));
}
