const parquet = require('@dsnp/parquetjs');
async function main() {
  const schema = new parquet.ParquetSchema({
    id: { type: 'INT64' },
    name: { type: 'UTF8', optional: true },
    tags: { type: 'INT32', repeated: true },
  });
  for (const [file, v2] of [['parquetjs_v2.parquet', true], ['parquetjs_v1.parquet', false]]) {
    const w = await parquet.ParquetWriter.openFile(schema, file, { pageSize: 16, rowGroupSize: 50, useDataPageV2: v2, pageIndex: true });
    for (let i = 0; i < 120; i++) {
      const tags = [];
      for (let j = 0; j < (i * 7) % 5; j++) tags.push(i * 10 + j);
      await w.appendRow({ id: i, name: i % 3 == 0 ? undefined : 'n' + i, tags });
    }
    await w.close();
  }
}
main().catch(e => { console.error(e); process.exit(1); });
