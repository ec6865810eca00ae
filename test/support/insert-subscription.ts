/**
 * A program: `node insert-subscription.js URL ROW` inserts the subscription row ROW (JSON) into
 * the database at URL, from a connection of its own, and exits once it has committed. Tests run
 * it synchronously (execFileSync) to make another process's write meet a read at a chosen point.
 */
import { openDatabase } from '../../src/db/connect.js';
import { insertSubscription } from '../../src/db/stores/subscriptions.js';

const [url, row] = process.argv.slice(2);
const handle = openDatabase(url!);
try {
  await insertSubscription(handle.db, handle.capabilities, JSON.parse(row!));
} finally {
  await handle.close();
}
