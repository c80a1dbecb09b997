import { ValidationError } from "./errors.js";

/** Control characters other than tab, CR and LF: never meaningful in names or descriptions. */
function isForbiddenControl(code: number): boolean {
  return (code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) || code === 0x7f;
}

export function assertPlainText(value: string, field: string): void {
  for (let i = 0; i < value.length; i++) {
    if (isForbiddenControl(value.charCodeAt(i))) throw new ValidationError(`${field} contains control characters`, field);
  }
}

/** Control characters (C0, DEL and C1): none belongs in a key or an identifier. */
const CONTROL = /\p{Cc}/u;

/** Refuses every control character, tab and newlines included. */
export function assertPrintable(value: string, field: string): void {
  if (CONTROL.test(value)) throw new ValidationError(`${field} contains control characters; use printable characters only`, field);
}
