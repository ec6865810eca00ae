/** The closing summary of an import, as lines for a person to read. */
import type { ImportReport, SubscriptionReport } from './import-run.js';
import type { Listed, Tally } from './tally.js';

export interface RunFacts {
  from: string;
  to: string;
  zone: string;
  seconds: number;
  /** Peak resident memory of the process, in bytes. */
  peakBytes: number;
  userLimit: number | 'off';
  retention: string;
}

export function summaryLines(report: ImportReport, facts: RunFacts): string[] {
  const { subscriptions: s, log } = report;
  const lines = [
    `import-pacifica: from ${facts.from} (schema ${report.version}; its times read in ${facts.zone}) into ${facts.to}`,
    `subscriptions: ${tallyLine(s)}`,
    ...subscriptionDetails(s, facts),
  ];
  if (log === 'none') lines.push('event log: none (schema 2.0 has no event log)');
  else if (log === 'skipped') lines.push(report.interrupted ? 'event log: not begun' : 'event log: not imported (--subscriptions-only)');
  else {
    lines.push(`events: ${tallyLine(log.events)}`, `matches: ${tallyLine(log.matches)}`);
    if (log.repeatedIds > 0)
      lines.push(
        `  ${log.repeatedIds} new event${plural(log.repeatedIds)} repeat${log.repeatedIds === 1 ? 's' : ''} the source and id of an earlier one (the original logged both): kept under ${log.repeatedIds === 1 ? 'its' : 'their'} own uuid${plural(log.repeatedIds)}, the id written id#uuid`,
      );
    if (log.olderThanRetention > 0)
      lines.push(
        `  ${log.olderThanRetention} new event${plural(log.olderThanRetention)} ${log.olderThanRetention === 1 ? 'was' : 'were'} received longer ago than NOTIFICATIONS_RETENTION (${facts.retention}): the server's retention purge removes ${log.olderThanRetention === 1 ? 'it' : 'them'}; set it longer, or off, to keep the history`,
      );
  }
  for (const [kind, tally] of kinds(report)) {
    lines.push(...listed(`${kind} that conflict with a row here (left as it is)`, tally.conflicts));
    lines.push(...listed(`${kind} that could not be read (not imported)`, tally.unreadable));
  }
  const rate = facts.seconds > 0 ? Math.round(report.logRows / facts.seconds) : 0;
  const timing = `in ${facts.seconds.toFixed(1)} s${report.logRows > 0 ? ` (${rate} log rows a second)` : ''}, peak resident memory ${Math.round(facts.peakBytes / 1e6)} MB`;
  if (report.interrupted)
    lines.push(`interrupted ${timing}: run the same command again to finish; what was written stays, and nothing is written twice`);
  else if (nothingNew(report)) lines.push(`nothing new: everything was here already; done ${timing}`);
  else lines.push(`done ${timing}`);
  return lines;
}

/** Whether anything was left out: a conflict, or a row that could not be read. */
export function leftOut(report: ImportReport): boolean {
  return kinds(report).some(([, tally]) => tally.conflicts.count + tally.unreadable.count > 0);
}

function kinds(report: ImportReport): Array<[string, Tally]> {
  const all: Array<[string, Tally]> = [['subscriptions', report.subscriptions]];
  if (typeof report.log === 'object') all.push(['events', report.log.events], ['matches', report.log.matches]);
  return all;
}

function nothingNew(report: ImportReport): boolean {
  return kinds(report).every(([, tally]) => tally.new === 0);
}

function tallyLine(tally: Tally): string {
  const parts = [
    `${tally.new} new`,
    `${tally.present} already present${tally.changedHere > 0 ? `, ${tally.changedHere} of them changed here since` : ''}`,
  ];
  if (tally.conflicts.count > 0) parts.push(`${tally.conflicts.count} conflict${plural(tally.conflicts.count)}`);
  if (tally.unreadable.count > 0) parts.push(`${tally.unreadable.count} unreadable`);
  return `${parts.join(', ')} (of ${tally.read} read)`;
}

function subscriptionDetails(s: SubscriptionReport, facts: RunFacts): string[] {
  const lines: string[] = [];
  if (s.deleted + s.disabled > 0)
    lines.push(`  of the new: ${s.deleted} deleted (404 to everyone, kept for the log), ${s.disabled} disabled`);
  if (s.disabledByImport.length > 0) {
    lines.push(`  came over disabled, to be fixed and enabled by their owners (PUT with "disabled": null): ${s.disabledByImport.length}`);
    for (const d of s.disabledByImport) lines.push(`    ${d.uuid} ${d.user} ${JSON.stringify(d.name)}: ${d.reasons.join('; ')}`);
  }
  if (s.credentialsMoved.length > 0) {
    lines.push(
      `  user name and password moved from target_url into auth (sent as HTTP Basic, as the original did): ${s.credentialsMoved.length}`,
    );
    for (const m of s.credentialsMoved) lines.push(`    ${m.uuid} ${m.user}`);
  }
  if (s.usersOverLimit.length > 0) {
    lines.push(
      `  users holding more live subscriptions than NOTIFICATIONS_USER_SUBSCRIPTIONS (${facts.userLimit}), imported all the same (they create no more until under it):`,
    );
    for (const u of s.usersOverLimit) lines.push(`    ${u.user}: ${u.live}`);
  }
  return lines;
}

function listed(title: string, items: Listed): string[] {
  if (items.count === 0) return [];
  const more = items.count - items.first.length;
  return [
    `${title}: ${items.count}`,
    ...items.first.map((item) => `    ${item.uuid}: ${item.reason}`),
    ...(more > 0 ? [`    … and ${more} more`] : []),
  ];
}

function plural(n: number): string {
  return n === 1 ? '' : 's';
}
