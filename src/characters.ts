/**
 * Characters as a user counts them: Unicode code points, so 'é' and '😀' are one each although
 * '😀' takes two UTF-16 units in a JavaScript string. JSON Schema's maxLength (and so the
 * request schemas) counts the same way; an unpaired surrogate counts as one.
 */
export function characterCount(text: string): number {
  let count = text.length;
  for (let i = 0; i < text.length - 1; i++) {
    if (isHighSurrogate(text.charCodeAt(i)) && isLowSurrogate(text.charCodeAt(i + 1))) {
      count--;
      i++;
    }
  }
  return count;
}

const isHighSurrogate = (unit: number) => unit >= 0xd800 && unit <= 0xdbff;
const isLowSurrogate = (unit: number) => unit >= 0xdc00 && unit <= 0xdfff;
