/**
 * A subscription's extension attributes added to the event it is delivered: top-level members
 * in 1.0 and 0.3, members of the `extensions` object in the legacy 0.1 shape. An attribute the
 * event itself sets wins, so a subscriber always sees what the producer sent; a `null` member
 * is unset (JSON format 2.2) and is filled in.
 *
 * It works on the event's text, not its document: what is added is inserted and everything
 * else is left as the producer wrote it (numbers, escapes, spacing, member order).
 */
import { type Member, type ObjectSpan, objectSpan } from './json-text.js';
import type { ReceivedEvent } from './types.js';

export type ExtensionValues = Record<string, string | number | boolean>;

interface Edit {
  start: number;
  end: number;
  text: string;
}

/** The event's text with the extensions added; `event.text` itself when nothing is added. */
export function withExtensions(event: Pick<ReceivedEvent, 'specVersion' | 'text'>, extensions: ExtensionValues): string {
  const { text } = event;
  const envelope = objectSpan(text);
  if (event.specVersion !== '0.1') return splice(text, addUnset(text, envelope, extensions));
  const bag = lastMember(envelope, 'extensions');
  if (bag !== undefined && text[bag.start] === '{') return splice(text, addUnset(text, objectSpan(text, bag.start), extensions));
  const added = addUnset('{}', objectSpan('{}'), extensions);
  if (added.length === 0) return text;
  const bagText = splice('{}', added);
  // An `extensions` member that is null is unset: it becomes the new object.
  if (bag !== undefined) return splice(text, [{ start: bag.start, end: bag.end, text: bagText }]);
  return splice(text, [appendAt(envelope, [`"extensions":${bagText}`])]);
}

/** The edits that add to `object` (a span of `text`) each extension it does not set. */
function addUnset(text: string, object: ObjectSpan, extensions: ExtensionValues): Edit[] {
  const edits: Edit[] = [];
  const appended: string[] = [];
  for (const [name, value] of Object.entries(extensions)) {
    const member = lastMember(object, name);
    if (member === undefined) appended.push(`${JSON.stringify(name)}:${JSON.stringify(value)}`);
    else if (text.slice(member.start, member.end) === 'null')
      edits.push({ start: member.start, end: member.end, text: JSON.stringify(value) });
  }
  if (appended.length > 0) edits.push(appendAt(object, appended));
  return edits;
}

/** New members go right after the last one (or the opening brace), before any whitespace. */
function appendAt(object: ObjectSpan, members: string[]): Edit {
  const last = object.members.at(-1);
  const at = last === undefined ? object.start + 1 : last.end;
  return { start: at, end: at, text: `${last === undefined ? '' : ','}${members.join(',')}` };
}

/** JSON.parse keeps the last of members with the same name, so that is the one that counts. */
function lastMember(object: ObjectSpan, name: string): Member | undefined {
  return object.members.findLast((member) => member.name === name);
}

function splice(text: string, edits: readonly Edit[]): string {
  if (edits.length === 0) return text;
  let result = '';
  let from = 0;
  for (const edit of [...edits].sort((a, b) => a.start - b.start)) {
    result += text.slice(from, edit.start) + edit.text;
    from = edit.end;
  }
  return result + text.slice(from);
}
