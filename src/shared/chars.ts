/**
 * ASCII character classes by code: a string's `charCodeAt` or a byte of a buffer. Past the end
 * (NaN, or undefined from a buffer) is neither.
 */
export const isDigit = (c: number | undefined): boolean => c !== undefined && c >= 48 && c <= 57;
export const isLetter = (c: number | undefined): boolean => c !== undefined && ((c >= 65 && c <= 90) || (c >= 97 && c <= 122));
