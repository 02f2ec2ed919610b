/**
 * The floor any HTTP-to-SQL bridge has: fastify, one route, the query string run on a pg pool
 * with no authentication, no policy and no encoding work. Run as its own process by the bench,
 * with as many processes as the repobase it is compared with (node:cluster, the pool shared out
 * as repobase shares upstreamPoolMax).
 */
import cluster from 'node:cluster';
import Fastify from 'fastify';
import pg from 'pg';

const [port, url, poolMax, processes] = [Number(process.argv[2]), process.argv[3]!, Number(process.argv[4] ?? 10), Number(process.argv[5] ?? 1)];

if (processes > 1 && cluster.isPrimary) {
  for (let i = 0; i < processes; i++) cluster.fork();
  process.on('SIGTERM', () => {
    for (const w of Object.values(cluster.workers ?? {})) w?.kill('SIGTERM');
    process.exit(0);
  });
} else {
  const pool = new pg.Pool({ connectionString: url, max: Math.ceil(poolMax / processes) });
  const app = Fastify();
  app.post<{ Body: { query_string: string } }>('/query', async (req) => {
    const res = await pool.query({ text: req.body.query_string, rowMode: 'array' });
    return { fields: res.fields.map((f) => f.name), data: res.rows };
  });
  await app.listen({ port, host: '127.0.0.1' });
  process.on('SIGTERM', () => void app.close().then(() => pool.end()).then(() => process.exit(0)));
}
