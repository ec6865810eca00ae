/**
 * The ceiling: a bare Fastify server that parses the same CloudEvent body as /receive and
 * answers with a small JSON object, nothing else. Run as its own process, like the service;
 * prints its port on stdout.
 */
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.addContentTypeParser('application/cloudevents+json', { parseAs: 'string' }, (_request, body, done) => {
  try {
    done(null, JSON.parse(body as string));
  } catch (error) {
    done(error as Error, undefined);
  }
});
app.post('/receive', async (request) => ({ uuid: (request.body as { id: string }).id, matches: 0 }));
await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
console.log(typeof address === 'object' && address ? address.port : '');
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
