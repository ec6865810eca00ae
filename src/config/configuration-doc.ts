// docs/configuration.md, generated from the settings table so that the page and
// `svc-notifications --help` cannot disagree. `npm run docs` writes it
// (scripts/docs.mjs); test/config/configuration-doc.test.ts fails when the file
// differs from what this returns. Edit the prose here and the table in settings.ts.
import { SETTING_KEYS, SETTINGS, type SettingInfo } from './settings.js';

const HEADER = `<!-- Generated from src/config/settings.ts and src/config/configuration-doc.ts by \`npm run docs\`: edit those, not this file. -->

# Configuration

Settings come from, in this order of precedence:

1. command-line flags (only the settings with a flag below have one);
2. \`NOTIFICATIONS_*\` environment variables;
3. a JSON file named by \`--config FILE\` or \`NOTIFICATIONS_CONFIG\`, whose keys are the variable
   names: \`{"NOTIFICATIONS_PORT": 8080}\`;
4. the defaults below.

They are validated once, at start-up. A bad value, an unknown \`NOTIFICATIONS_*\` variable (a
typo), an unknown key in the file or an unknown flag stops the service with one line naming
it. \`svc-notifications --help\` prints the same table. The admin CLI (\`svc-notifications-cmd\`)
reads the same settings, so it uses the database the service would use.

Durations take a unit: \`ms\`, \`s\`, \`m\`, \`h\`, \`d\` (\`250ms\`, \`30s\`, \`2h\`, \`30d\`). Sizes take
\`b\`, \`kb\` or \`mb\`, where 1kb = 1024 bytes. Lists are comma-separated.

## Settings

| variable | flag | default | description |
|---|---|---|---|
`;

const FOOTER = `
## Notes

**Database URL.** \`sqlite:<path>\` takes a relative or absolute path; the file is created only
by \`svc-notifications-cmd dbsync\` (the server and the other commands refuse a missing file and
name \`dbsync\`). \`sqlite::memory:\` keeps the database in the server's memory, lost when it
stops: since no \`dbsync\` in another process can reach it, the server creates its schema itself
(for such a database only), and \`svc-notifications-cmd\` refuses it (exit 2). A PostgreSQL URL
(\`postgres://\` or \`postgresql://\`) may end in \`?schema=name\` to keep the service's tables in
their own schema. See [Operations](operations.md) for running on PostgreSQL.

**Database time-out.** \`NOTIFICATIONS_DATABASE_TIMEOUT\` bounds every wait for the database: a
connection (new, or a free one of the pool), a statement, a SQLite write lock. A request that
would wait longer is answered 503 with \`Retry-After\`. It is also PostgreSQL's
\`statement_timeout\` for the server, and the connect time-out of the server's start and of the
CLI: a database that does not answer stops them after 5 s with one line, \`no answer from the
database within 5 s (connect time-out)\`, exit 1. See
[When the database fails](operations.md#when-the-database-fails).

**Retries.** The default schedule, \`1s,5s,30s,2m,10m,30m,1h,2h,4h,8h,9h\`, adds up to 24 h 42 min,
so a target that is down for a whole day still gets its events. Each delay gets ±20% jitter,
and a target's \`Retry-After\` can only lengthen it. See [Delivery](delivery.md#retries).

**Targets.** \`NOTIFICATIONS_TARGET_CONCURRENCY\` counts connections per target origin (scheme,
host and port) per instance. \`NOTIFICATIONS_TARGET_TIMEOUT\` covers one whole exchange with a
target or the policy service: connecting, sending and the answer. \`NOTIFICATIONS_LEASE\` must be
longer than it (the service refuses to start otherwise), or a delivery could be claimed again
while its request is still running. \`NOTIFICATIONS_TARGET_DENY\` and
\`NOTIFICATIONS_TARGET_ALLOW\` take CIDR blocks (\`10.0.0.0/8\`, \`fd00::/8\`; a single address is a
/32 or /128); the IPv4-mapped (\`::ffff:a.b.c.d\`) and NAT64 (\`64:ff9b::a.b.c.d\`) forms of a
denied IPv4 address are denied too. The default deny list holds \`0.0.0.0/8\` and \`::\` (which
reach this host), link-local addresses and the cloud metadata addresses. See
[Delivery](delivery.md#which-targets-may-be-reached).

**Credentials.** \`NOTIFICATIONS_SECRET_KEY\` seals stored target credentials with AES-256-GCM.
Generate one with \`openssl rand -base64 32\` (hex works too), and give every instance the same
key. See [Delivery](delivery.md#credentials). It seals subscriptions' signing secrets too.

**Signatures.** Every delivery is signed as Standard Webhooks specifies, with its
subscription's secret. After the secret is rotated, deliveries carry a second signature, made
with the previous secret, for \`NOTIFICATIONS_SECRET_OVERLAP\` (\`24h\` by default): receivers
have that long to switch. See [Delivery](delivery.md#signatures).

**JSONPath dialect.** \`auto\` reads an expression as RFC 9535 when it is valid there and as
jsonpath2 otherwise; \`jsonpath2-first\` tries jsonpath2 first; \`rfc9535\` and \`jsonpath2\` allow
one dialect only. The dialect is stored with each subscription, so changing the setting never
changes what an existing subscription means. See [JSONPath](jsonpath.md).

**Retention.** \`NOTIFICATIONS_RETENTION\` (\`30d\` by default, \`off\` to keep every event) is how
long the event log keeps an event, counted from when it was received; an event whose policy
checks or deliveries are still going on past that is kept until they finish. See
[Retention](operations.md#retention).

**Identity.** The user header is set by the front proxy, and believed only on connections from
\`NOTIFICATIONS_TRUSTED_PROXIES\` (loopback by default: a proxy on the same host); list the
proxy's address there when it runs elsewhere. See [Identity](api.md#identity) and the
[security model](operations.md#security-model). \`npm start\` runs the service for one person on
their own machine: it listens on \`127.0.0.1\` only (\`--address 127.0.0.1\`, whatever
\`NOTIFICATIONS_ADDRESS\` says) and takes requests without the header as the user \`local\`
(\`--default-user local\`), so that the [console](console.md) works without a proxy. The default
user, too, is given only to connections from \`NOTIFICATIONS_TRUSTED_PROXIES\`: every program
there that omits the header acts as that user.

**Receiving.** A server that listens beyond loopback with neither \`NOTIFICATIONS_RECEIVE_TOKEN\`
nor \`NOTIFICATIONS_RECEIVE_ALLOW\` warns at start-up: anyone who reaches its port can post
events. Set either or both (the metadata service's address in the list, its token in the
header).

**Traces.** OpenTelemetry's own variables turn tracing on and configure it:
\`OTEL_EXPORTER_OTLP_ENDPOINT\` (or \`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT\`) names the collector,
\`OTEL_EXPORTER_OTLP_PROTOCOL\` (\`http/protobuf\` or \`http/json\`), \`OTEL_EXPORTER_OTLP_HEADERS\`,
\`OTEL_BSP_SCHEDULE_DELAY\`, \`OTEL_TRACES_SAMPLER\`, \`OTEL_SERVICE_NAME\` and the others listed there. They are not
settings: no flag or file key sets them. Without an endpoint nothing is traced. See
[Traces](operations.md#traces).

**Other variables.** \`NOTIFICATIONS_CONFIG\` names the JSON file.
\`NOTIFICATIONS_TEST_DATABASE_URL\` (PostgreSQL for \`npm test\`) and
\`NOTIFICATIONS_BENCH_DATABASE_URL\` (PostgreSQL for \`npm run bench\`) are read by the tests and
the benchmark, not by the service; none of the three counts as a typo.
`;

/** Text for a markdown table cell: no pipes or line breaks, and `<…>` shown rather than read as HTML. */
function cell(text: string): string {
  return text
    .replace(/\|/g, '\\|')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/\s*\n\s*/g, ' ');
}

function code(text: string): string {
  return `\`${text}\``;
}

function defaultCell(setting: SettingInfo): string {
  if (setting.default === null) return cell(`unset: ${setting.whenUnset ?? 'none'}`);
  if (setting.default === '') return 'none';
  // A list's items each in their own code span, so that a long default wraps.
  return setting.default.split(',').map(code).join(', ');
}

/** The whole text of docs/configuration.md. */
export function configurationDoc(): string {
  const rows = SETTING_KEYS.map((key) => {
    const setting: SettingInfo = SETTINGS[key];
    const flag = setting.flag === undefined ? '' : code(setting.flag);
    return `| ${code(setting.env)} | ${flag} | ${defaultCell(setting)} | ${cell(setting.description)} |`;
  });
  return `${HEADER}${rows.join('\n')}\n${FOOTER}`;
}
