// node seeds.mjs DIR: one tiny tokens file per writer (16 rows, lists of at
// most 8 tokens: a few KB), DIR/<writer>.parquet (arrow-go's as an Arrow
// IPC file for the Go side), for the fuzz targets' seed corpora.

import { join } from 'node:path';
import { tokens } from './data.mjs';
import { writers } from './writers.mjs';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node seeds.mjs DIR');
  process.exit(2);
}
// Settings that give several pages even to 16 rows where the writer
// counts pages in rows (parquetjs: and its offset index then claims row 0
// for every page).
const opts = { parquetjs: { list: 'list', writer: { pageSize: 5 } }, duckdb: { rowGroupSize: 8 } };
for (const [k, w] of Object.keys(writers).entries()) {
  await writers[w]('tokens', tokens(k * 100, 16, 1000 + k, 8), join(dir, `${w}.parquet`), opts[w] || {});
}
