// Runs SQL with the DuckDB engine of @duckdb/node-api (pinned in
// package.json, installed by scripts/tools.sh) and prints the results as
// JSON, for the Go test that runs the DuckDB queries of
// docs/archive-queries.md as they are written.
//
// Input on stdin: {"dir": "<working directory>", "blocks": ["<sql>", ...]}.
// Each block may hold several statements; they run in order on one
// connection (a block can create a view that later blocks use).
// Output on stdout: [{"columns": [...], "rows": [[...], ...]}, ...], one
// entry per block, holding the result of its last statement (JSON values:
// numbers, strings, booleans, null, lists, objects; BIGINT and DATE as
// strings, as the Node API renders them).
// A failing statement prints "block N: <error>" on stderr and exits 1.
import { DuckDBInstance } from '@duckdb/node-api';

async function readStdin() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

const input = await readStdin();
if (input.dir) process.chdir(input.dir);
const instance = await DuckDBInstance.create(':memory:', { threads: '2' });
const conn = await instance.connect();
const out = [];
for (const [i, sql] of (input.blocks || []).entries()) {
  try {
    const stmts = await conn.extractStatements(sql);
    let reader = null;
    for (let s = 0; s < stmts.count; s++) {
      const prepared = await stmts.prepare(s);
      reader = await prepared.runAndReadAll();
    }
    out.push(reader ? { columns: reader.columnNames(), rows: reader.getRowsJson() } : { columns: [], rows: [] });
  } catch (err) {
    process.stderr.write(`block ${i + 1}: ${err && err.message ? err.message : err}\n`);
    process.exit(1);
  }
}
process.stdout.write(JSON.stringify(out) + '\n');
conn.closeSync?.();
