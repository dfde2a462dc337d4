import type { ImageContentType } from '@estate/contracts/media';
import type { Rendition } from './gallery.rules';

/** Bytes kept from the start of an upload to read its header without the rest of the file. */
export const HEADER_BYTES = 512 * 1024;

/** Largest image accepted, in pixels (width × height as declared in the header): 50 megapixels. */
export const DEFAULT_MAX_PIXELS = 50_000_000;

/** Widest or tallest image accepted: above any camera's, below what stalls a decoder (a 1 × 49,000,000 strip). */
export const MAX_IMAGE_SIDE = 20_000;
/** Longest side at most this many times the shortest: a wide panorama passes, a strip of pixels does not. */
export const MAX_ASPECT_RATIO = 12;
/** A render that runs longer than this is stopped and the image marked failed (seconds of libvips work). */
export const DEFAULT_RENDER_TIMEOUT_SECONDS = 60;

/**
 * Why an image of this header size is refused before anything is decoded, naming the limit it
 * breaks; null when it may be decoded. Pixels bound memory; sides and shape bound decoding time,
 * which for a thin strip grows with its length, not its pixel count.
 */
export function sizeRefusal(width: number, height: number, maxPixels: number): string | null {
  const size = `the image is ${width}×${height} pixels`;
  if (width > MAX_IMAGE_SIDE) return `${size}; its width may be at most ${MAX_IMAGE_SIDE} pixels`;
  if (height > MAX_IMAGE_SIDE) return `${size}; its height may be at most ${MAX_IMAGE_SIDE} pixels`;
  if (width * height > maxPixels)
    return `${size} (${Math.round((width * height) / 1e6)} megapixels); at most ${Math.round(maxPixels / 1e6)} megapixels are accepted`;
  if (Math.max(width, height) > MAX_ASPECT_RATIO * Math.min(width, height))
    return `${size}; its aspect ratio may be at most ${MAX_ASPECT_RATIO}:1 (the long side at most ${MAX_ASPECT_RATIO} times the short one)`;
  return null;
}

export const LARGE_MAX_SIDE = 1600;
export const THUMB_MAX_SIDE = 320;
export const JPEG_QUALITY = 82;
export const WEBP_QUALITY = 80;
/** The full-size public copy: re-encoded without metadata, close to the upload's quality. */
export const ORIGINAL_JPEG_QUALITY = 90;

export type FileFormat = 'jpeg' | 'png' | 'webp';

/** One public file of an image: which size, in which format, at which quality (ignored for PNG). */
export interface RenditionSpec {
  rendition: Rendition;
  format: FileFormat;
  quality: number;
}

/**
 * The product's rendition set, full size first: the upload in its own format, then `large` and
 * `thumb` as JPEG and WebP (served as JPEG, or WebP on request).
 */
export function renditionPlan(contentType: ImageContentType): RenditionSpec[] {
  return [
    contentType === 'image/png'
      ? { rendition: 'original', format: 'png', quality: 100 }
      : { rendition: 'original', format: 'jpeg', quality: ORIGINAL_JPEG_QUALITY },
    { rendition: 'large', format: 'jpeg', quality: JPEG_QUALITY },
    { rendition: 'large', format: 'webp', quality: WEBP_QUALITY },
    { rendition: 'thumb', format: 'jpeg', quality: JPEG_QUALITY },
    { rendition: 'thumb', format: 'webp', quality: WEBP_QUALITY },
  ];
}

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
