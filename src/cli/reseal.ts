/**
 * `reseal`: after a key is put first in NOTIFICATIONS_SECRET_KEY, seals every stored secret
 * under it, so that the keys after it can be dropped.
 */
import { resealStoredSecrets } from '../subscriptions/seal-at-rest.js';
import { type Command, EXIT } from './command.js';

const subscriptions = (count: number) => `${count} subscription${count === 1 ? '' : 's'}`;

export const reseal: Command = {
  name: 'reseal',
  usage: 'reseal',
  summary:
    'seal every stored target credential and signing secret under the first key of NOTIFICATIONS_SECRET_KEY (the keys after it ' +
    'only open); prints how many subscriptions were sealed again; after it the other keys can be dropped. Exit 1, naming the ' +
    'subscriptions, when a secret opens with none of the keys (it is left as it is); exit 2 without NOTIFICATIONS_SECRET_KEY',
  check: (args) => (args.length === 0 ? undefined : `reseal: unknown argument ${args[0]}`),
  async run({ config, database, out, err }) {
    if (config.secretKey === null) {
      err('reseal: NOTIFICATIONS_SECRET_KEY is not set: give the keys, the one to seal with first (e.g. NEW,OLD)');
      return EXIT.usage;
    }
    const outcome = await resealStoredSecrets(database, config.secretKey);
    for (const { uuid, secrets } of outcome.unreadable)
      err(`reseal: subscription ${uuid}: its ${secrets.join(', ')} opens with none of the keys of NOTIFICATIONS_SECRET_KEY; left as it is`);
    for (const uuid of outcome.busy) err(`reseal: subscription ${uuid} changed each time it was read; run reseal again`);
    out(`reseal: sealed the secrets of ${subscriptions(outcome.resealed)} under the first key (${outcome.current} already were)`);
    return outcome.unreadable.length > 0 || outcome.busy.length > 0 ? EXIT.failure : EXIT.ok;
  },
};
