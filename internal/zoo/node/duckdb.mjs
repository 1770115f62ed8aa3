// node duckdb.mjs STATEMENT...: runs the statements in order in a fresh
// in-memory DuckDB and prints the rows of each statement that returns
// rows as JSON lines (DuckDB's JSON forms: BIGINT as a string).

import { DuckDBInstance } from '@duckdb/node-api';

const inst = await DuckDBInstance.create(':memory:');
const con = await inst.connect();
for (const sql of process.argv.slice(2)) {
  const r = await con.runAndReadAll(sql);
  if (r.columnCount === 0) continue;
  for (const row of r.getRowObjectsJson()) process.stdout.write(JSON.stringify(row) + '\n');
}
con.closeSync();
inst.closeSync();
