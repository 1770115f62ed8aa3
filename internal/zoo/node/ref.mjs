// node ref.mjs DIR: DuckDB's reading of every fixture in DIR/plan.json, as
// the reference the tests compare with. For each fixture it writes
// DIR/<name>.ref.jsonl, one JSON object per row (in id order) with every
// column in a form that JSON carries exactly:
//
//   id          the integer
//   input_ids   an array of integers (null elements as null)
//   text,
//   caption     the string
//   score       the double in C's %a hexadecimal form ("0x1.8p+0", "-0x0p+0",
//               "inf", "-inf", "nan"): exact where a decimal form may not be
//   image       "<length>:<sha256 hex>" of the bytes
//
// and null for a null value; and it adds "ref_rows" (the rows DuckDB read)
// to each plan entry in DIR/plan.json.

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { sqlString } from './writers.mjs';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node ref.mjs DIR');
  process.exit(2);
}
const planPath = join(dir, 'plan.json');
const plan = JSON.parse(readFileSync(planPath, 'utf8'));
const inst = await DuckDBInstance.create(':memory:');
const con = await inst.connect();

const exprs = {
  id: 'id',
  input_ids: 'input_ids',
  text: 'text',
  caption: 'caption',
  score: "printf('%a', score)",
  image: "octet_length(image)::VARCHAR || ':' || sha256(image)",
};

for (const f of plan) {
  const src = `read_parquet(${sqlString(join(dir, f.file))})`;
  const cols = (await con.runAndReadAll(`DESCRIBE SELECT * FROM ${src}`)).getRowObjectsJson().map((r) => r.column_name);
  const sel = cols.map((c) => {
    if (!(c in exprs)) throw new Error(`${f.file}: unexpected column ${c}`);
    return `${exprs[c]} AS ${c}`;
  });
  const out = join(dir, `${f.name}.ref.jsonl`);
  await con.run(`COPY (SELECT ${sel.join(', ')} FROM ${src} ORDER BY id) TO ${sqlString(out)} (FORMAT json)`);
  const n = (await con.runAndReadAll(`SELECT count(*)::BIGINT AS n FROM ${src}`)).getRowObjectsJson()[0].n;
  f.ref = `${f.name}.ref.jsonl`;
  f.ref_rows = Number(n);
  f.columns = cols;
}
writeFileSync(planPath, JSON.stringify(plan, null, 1) + '\n');
con.closeSync();
inst.closeSync();
