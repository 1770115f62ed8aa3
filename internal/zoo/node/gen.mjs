// node gen.mjs DIR: writes every fixture of fixtures.mjs into DIR
// (DIR/<writer>-<variant>.parquet; for arrow-go an Arrow IPC file that the
// Go side turns into Parquet), and DIR/plan.json listing them.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixtures, ID_STRIDE } from './fixtures.mjs';
import { tokens, images } from './data.mjs';
import { writers } from './writers.mjs';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node gen.mjs DIR');
  process.exit(2);
}
const only = process.argv[3]; // optional: one fixture name, for debugging
const plan = [];
for (const [k, f] of fixtures.entries()) {
  const name = `${f.writer}-${f.variant}`;
  const base = k * ID_STRIDE;
  const file = `${name}.parquet`;
  plan.push({ name, writer: f.writer, variant: f.variant, set: f.set, file, rows: f.rows, base, options: f.opts || {} });
  if (only && only !== name) continue;
  const data = f.set === 'tokens' ? tokens(base, f.rows, k + 1) : images(base, f.rows, k + 1);
  const t0 = Date.now();
  await writers[f.writer](f.set, data, join(dir, file), f.opts || {});
  console.error(`zoo: ${name}: ${f.rows} rows in ${Date.now() - t0} ms`);
}
writeFileSync(join(dir, 'plan.json'), JSON.stringify(plan, null, 1) + '\n');
