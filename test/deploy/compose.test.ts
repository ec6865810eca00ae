/**
 * compose.yaml, as Compose reads it (`docker-compose config`, or `docker compose config`):
 * PostgreSQL, a one-shot dbsync the instances wait for, two instances with the receive token,
 * and nginx in front with the locations tested in front-proxy.test.ts, the only published port.
 * The images are not pulled or run here. Skipped, with why, without Compose.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { describeOn } from '../support/database.js';
import { cleanEnv, runCommand } from '../support/processes.js';
import { ROOT } from '../support/project.js';
/** Debian's docker-compose, else the Compose plugin of the docker command. */
const COMPOSE: string[] | undefined = [['docker-compose'], ['docker', 'compose']].find(
  ([command, ...args]) => spawnSync(command!, [...args, 'version']).status === 0,
);
const COMPOSE_SKIP: string | false = COMPOSE ? false : 'Compose is missing: apt-get install docker-compose (.ci/run does)';
const REQUIRED = { POSTGRES_PASSWORD: 'db-password', NOTIFICATIONS_SECRET_KEY: 'a-key', NOTIFICATIONS_RECEIVE_TOKEN: 'a-token' };

function compose(args: string[], env: Record<string, string>) {
  return runCommand(COMPOSE![0]!, [...COMPOSE!.slice(1), '--file', join(ROOT, 'compose.yaml'), ...args], { cwd: ROOT, env: cleanEnv(env) });
}

/** The services of `config`'s YAML, each as the text of its block. */
function serviceBlocks(yaml: string): Map<string, string> {
  const services = yaml
    .slice(yaml.indexOf('\nservices:\n') + 1)
    .split('\n')
    .slice(1);
  const blocks = new Map<string, string>();
  let current = '';
  for (const line of services) {
    if (/^\S/.test(line)) break;
    const name = /^ {2}(\S+):$/.exec(line)?.[1];
    if (name !== undefined) blocks.set((current = name), '');
    else blocks.set(current, `${blocks.get(current)}${line}\n`);
  }
  return blocks;
}

describeOn({ skip: COMPOSE_SKIP }, 'compose.yaml', () => {
  it('is accepted, with PostgreSQL, a one-shot dbsync, two instances that wait for it, and the proxy in front', async () => {
    const config = await compose(['config'], REQUIRED);
    assert.equal(config.code, 0, config.stderr);
    const services = serviceBlocks(config.stdout);
    assert.deepEqual([...services.keys()].sort(), ['dbsync', 'notifications-1', 'notifications-2', 'postgres', 'proxy']);

    assert.match(services.get('dbsync')!, /command:\n\s+- svc-notifications-cmd\n\s+- dbsync\n/);
    assert.match(services.get('dbsync')!, /restart: "no"/);
    for (const instance of ['notifications-1', 'notifications-2']) {
      const block = services.get(instance)!;
      assert.match(block, /dbsync:\n\s+condition: service_completed_successfully/, instance);
      assert.match(block, /NOTIFICATIONS_DATABASE_URL: postgres:\/\/notifications:db-password@postgres:5432\//, instance);
      assert.match(block, /NOTIFICATIONS_RECEIVE_TOKEN: a-token/, instance);
      assert.match(block, /NOTIFICATIONS_SECRET_KEY: a-key/, instance);
      assert.match(block, /NOTIFICATIONS_TRUSTED_PROXIES: 172\.30\.25\.10\/32/, `${instance} believes the proxy alone`);
      assert.doesNotMatch(block, /ports:/, `${instance} is reached through the proxy only`);
    }
    const proxy = services.get('proxy')!;
    assert.match(proxy, /published: 8070/);
    assert.match(proxy, /ipv4_address: 172\.30\.25\.10/, 'the proxy has the address the instances trust');
    for (const file of ['deploy/compose/nginx.conf', 'deploy/nginx/svc-notifications.conf']) {
      assert.ok(proxy.includes(join(ROOT, file)), `the proxy mounts ${file}`);
      assert.ok(existsSync(join(ROOT, file)), `${file} exists`);
    }
  });

  it('names each secret it lacks', async () => {
    for (const missing of Object.keys(REQUIRED)) {
      const env = Object.fromEntries(Object.entries(REQUIRED).filter(([name]) => name !== missing));
      const config = await compose(['config', '--quiet'], env);
      assert.notEqual(config.code, 0, `without ${missing}`);
      assert.match(config.stderr, new RegExp(`set ${missing}`), config.stderr);
    }
  });
});
