// One function per writer: write(set, data, path, opts) stores a tokens or
// images set (data.mjs) as one Parquet file with that writer's own API, at
// the settings opts names and the writer's defaults for everything else.

import { unlinkSync, writeFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';
import * as arrow from 'apache-arrow';
import pl from 'nodejs-polars';
import * as wasm from 'parquet-wasm';
import { parquetWriteFile } from 'hyparquet-writer';
import pqjs from '@dsnp/parquetjs';

import { listAt } from './data.mjs';

// arrowTable builds an Apache Arrow (JS) table of the set: every field
// nullable, as Arrow JS makes them; the list's element field is "item",
// Arrow's own default name.
export function arrowTable(set, d) {
  const n = d.id.length;
  const id = arrow.makeVector(d.id);
  if (set === 'tokens') {
    const elem = new arrow.Field('item', new arrow.Int32(), true);
    const child = arrow.makeData({ type: new arrow.Int32(), length: d.values.length, data: d.values });
    const list = arrow.makeVector(arrow.makeData({ type: new arrow.List(elem), length: n, nullCount: 0, valueOffsets: d.offsets, child }));
    return new arrow.Table({
      id,
      input_ids: list,
      text: arrow.vectorFromArray(d.text, new arrow.Utf8()),
      score: arrow.vectorFromArray(d.score, new arrow.Float64()),
    });
  }
  return new arrow.Table({
    id,
    image: arrow.vectorFromArray(d.image, new arrow.Binary()),
    caption: arrow.vectorFromArray(d.caption, new arrow.Utf8()),
  });
}

// duckdb: the set staged as a Parquet file by arrow-rs (DuckDB's appender
// takes minutes for 200,000 lists), read back and rewritten by DuckDB's
// COPY ... TO with the variant's options (none: DuckDB's defaults). The
// file is DuckDB's own writing; the values are the set's, exactly.
export async function duckdb(set, d, path, opts = {}) {
  const stage = path + '.stage';
  await arrowrs(set, d, stage);
  const inst = await DuckDBInstance.create(':memory:');
  const con = await inst.connect();
  const cols = set === 'tokens'
    ? 'id::BIGINT AS id, input_ids::INTEGER[] AS input_ids, text::VARCHAR AS text, score::DOUBLE AS score'
    : 'id::BIGINT AS id, image::BLOB AS image, caption::VARCHAR AS caption';
  const o = ['FORMAT parquet'];
  if (opts.compression) o.push(`COMPRESSION ${opts.compression}`);
  if (opts.rowGroupSize) o.push(`ROW_GROUP_SIZE ${opts.rowGroupSize}`);
  if (opts.version) o.push(`PARQUET_VERSION ${opts.version}`);
  await con.run(`COPY (SELECT ${cols} FROM read_parquet(${sqlString(stage)}) ORDER BY id) TO ${sqlString(path)} (${o.join(', ')})`);
  con.closeSync();
  inst.closeSync();
  unlinkSync(stage);
}

// sqlString quotes s as an SQL string literal.
export function sqlString(s) {
  return "'" + s.replaceAll("'", "''") + "'";
}

// polars: the Arrow table read as a DataFrame (nodejs-polars has no binary
// series of its own), written by writeParquet (the node binding's default
// compression is none) or by a lazy sink with the variant's options.
export async function polars(set, d, path, opts = {}) {
  const df = pl.readIPC(Buffer.from(arrow.tableToIPC(arrowTable(set, d), 'file')));
  if (opts.sink) {
    await df.lazy().sinkParquet(path, opts.sink).collect();
    return;
  }
  df.writeParquet(path, opts.compression ? { compression: opts.compression } : undefined);
}

// arrowrs: parquet-wasm (arrow-rs compiled to WebAssembly) over the Arrow
// table, with WriterPropertiesBuilder settings from the variant.
export async function arrowrs(set, d, path, opts = {}) {
  const t = wasm.Table.fromIPCStream(arrow.tableToIPC(arrowTable(set, d), 'stream'));
  let b = new wasm.WriterPropertiesBuilder();
  if (opts.compression) b = b.setCompression(wasm.Compression[opts.compression]);
  if (opts.version) b = b.setWriterVersion(wasm.WriterVersion[opts.version]);
  if (opts.dictionary !== undefined) b = b.setDictionaryEnabled(opts.dictionary);
  if (opts.statistics) b = b.setStatisticsEnabled(wasm.EnabledStatistics[opts.statistics]);
  if (opts.pageSize) b = b.setDataPageSizeLimit(opts.pageSize);
  if (opts.rowGroupSize) b = b.setMaxRowGroupSize(opts.rowGroupSize);
  writeFileSync(path, wasm.writeParquet(t, b.build()));
}

// hyparquet: column data with an explicit schema (the list as a standard
// three-level LIST), options passed as given.
export async function hyparquet(set, d, path, opts = {}) {
  const n = d.id.length;
  let columnData, schema;
  if (set === 'tokens') {
    const lists = new Array(n);
    for (let i = 0; i < n; i++) lists[i] = listAt(d, i);
    columnData = [
      { name: 'id', data: d.id },
      { name: 'input_ids', data: lists },
      { name: 'text', data: d.text },
      { name: 'score', data: d.score },
    ];
    schema = [
      { name: 'root', num_children: 4 },
      { name: 'id', type: 'INT64', repetition_type: 'REQUIRED' },
      { name: 'input_ids', repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
      { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
      { name: 'element', type: 'INT32', repetition_type: 'REQUIRED' },
      { name: 'text', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
      { name: 'score', type: 'DOUBLE', repetition_type: 'OPTIONAL' },
    ];
  } else {
    columnData = [
      { name: 'id', data: d.id },
      { name: 'image', data: d.image },
      { name: 'caption', data: d.caption },
    ];
    schema = [
      { name: 'root', num_children: 3 },
      { name: 'id', type: 'INT64', repetition_type: 'REQUIRED' },
      { name: 'image', type: 'BYTE_ARRAY', repetition_type: 'OPTIONAL' },
      { name: 'caption', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
    ];
  }
  parquetWriteFile({ filename: path, columnData, schema, ...opts });
}

// parquetjs: @dsnp/parquetjs, row by row. opts.list picks how the token
// list is declared: "list" (a three-level LIST, as createListField makes
// it) or "repeated" (a bare repeated int32: the one-level form the spec's
// backward-compatibility rules read as list<int32>).
export async function parquetjs(set, d, path, opts = {}) {
  const { ParquetSchema, ParquetWriter } = pqjs;
  const codec = opts.compression ? { compression: opts.compression } : {};
  let fields;
  if (set === 'tokens') {
    const ids = opts.list === 'repeated'
      ? { type: 'INT32', repeated: true, ...codec }
      : { type: 'LIST', optional: true, fields: { list: { repeated: true, fields: { element: { type: 'INT32', ...codec } } } } };
    fields = {
      id: { type: 'INT64', ...codec },
      input_ids: ids,
      text: { type: 'UTF8', optional: true, ...codec },
      score: { type: 'DOUBLE', optional: true, ...codec },
    };
  } else {
    fields = {
      id: { type: 'INT64', ...codec },
      image: { type: 'BYTE_ARRAY', optional: true, ...codec },
      caption: { type: 'UTF8', optional: true, ...codec },
    };
  }
  const w = await ParquetWriter.openFile(new ParquetSchema(fields), path, opts.writer || {});
  for (let i = 0; i < d.id.length; i++) {
    const row = { id: d.id[i] };
    if (set === 'tokens') {
      const l = listAt(d, i);
      row.input_ids = opts.list === 'repeated' ? l : { list: l.map((element) => ({ element })) };
      if (d.text[i] !== null) row.text = d.text[i];
      if (d.score[i] !== null) row.score = d.score[i];
    } else {
      row.image = Buffer.from(d.image[i].buffer, d.image[i].byteOffset, d.image[i].length);
      if (d.caption[i] !== null) row.caption = d.caption[i];
    }
    await w.appendRow(row);
  }
  await w.close();
}

// arrowgo: the Arrow table as an IPC file; the Go side (internal/zoo)
// writes the Parquet file from it with arrow-go's pqarrow at its defaults.
export async function arrowgo(set, d, path) {
  writeFileSync(path + '.arrow', arrow.tableToIPC(arrowTable(set, d), 'file'));
}

export const writers = { duckdb, polars, arrowrs, hyparquet, parquetjs, arrowgo };
