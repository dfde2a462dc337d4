import type { ImageContentType } from '@estate/contracts/media';

/** Bytes kept from the start of an upload to read its header without the rest of the file. */
export const HEADER_BYTES = 512 * 1024;

/** Largest image accepted, in pixels (width × height as declared in the header): 50 megapixels. */
export const DEFAULT_MAX_PIXELS = 50_000_000;

export const LARGE_MAX_SIDE = 1600;
export const THUMB_MAX_SIDE = 320;
export const JPEG_QUALITY = 82;
export const WEBP_QUALITY = 80;
/** The full-size public copy: re-encoded without metadata, close to the upload's quality. */
export const ORIGINAL_JPEG_QUALITY = 90;

const JPEG_MAGIC = Buffer.from([0xff, 0xd8, 0xff]);
const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Bytes needed before {@link sniffImageType} can decide. */
export const MAGIC_BYTES = PNG_MAGIC.length;

/** JPEG or PNG judged from the first bytes, whatever the client declared; null for anything else. */
export function sniffImageType(head: Buffer): ImageContentType | null {
  if (head.length >= JPEG_MAGIC.length && head.subarray(0, JPEG_MAGIC.length).equals(JPEG_MAGIC)) return 'image/jpeg';
  if (head.length >= PNG_MAGIC.length && head.subarray(0, PNG_MAGIC.length).equals(PNG_MAGIC)) return 'image/png';
  return null;
}

/** Width and height as shown: EXIF orientations 5 to 8 turn the image a quarter. */
export function displayedSize(
  width: number,
  height: number,
  orientation: number | undefined,
): { width: number; height: number } {
  return orientation !== undefined && orientation >= 5 && orientation <= 8
    ? { width: height, height: width }
    : { width, height };
}
