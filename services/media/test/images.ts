import sharp from 'sharp';

/**
 * Test images made with sharp at run time: a JPEG whose EXIF says "rotate 90° clockwise" and
 * carries GPS, plain JPEGs and PNGs, a header declaring billions of pixels, corrupt bytes.
 */

/** A `width`×`height` JPEG, left half red and right half blue (so a rotation shows). */
export async function jpeg(
  width: number,
  height: number,
  options: { orientation?: number; gps?: boolean; quality?: number } = {},
): Promise<Buffer> {
  const left = Math.floor(width / 2);
  let img = sharp({ create: { width, height, channels: 3, background: { r: 0, g: 0, b: 255 } } }).composite([
    { input: { create: { width: left, height, channels: 3, background: { r: 255, g: 0, b: 0 } } }, left: 0, top: 0 },
  ]);
  img = img.jpeg({ quality: options.quality ?? 85 });
  if (options.gps) {
    img = img.withExif({
      IFD0: { Make: 'TestCam', Model: 'T-1', Copyright: 'Photographer' },
      IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '30/1 16/1 0/1', GPSLongitudeRef: 'W', GPSLongitude: '97/1 44/1 0/1' },
    });
  }
  if (options.orientation) img = img.withMetadata({ orientation: options.orientation });
  return img.toBuffer();
}

export async function png(width: number, height: number, alpha = false): Promise<Buffer> {
  return sharp({
    create: { width, height, channels: alpha ? 4 : 3, background: { r: 10, g: 200, b: 30, alpha: alpha ? 0.5 : 1 } },
  })
    .png()
    .toBuffer();
}

/** A noisy JPEG (compresses badly, like a real photo) of about `megapixels`. */
export async function photo(width: number, height: number, quality = 90): Promise<Buffer> {
  const raw = Buffer.alloc(width * height * 3);
  let x = 12345;
  for (let i = 0; i < raw.length; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    raw[i] = (x >> 16) & 0xff;
  }
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .jpeg({ quality })
    .toBuffer();
}

/** A tiny JPEG whose frame header (SOF0) claims `width`×`height` pixels: a decompression bomb. */
export async function jpegBomb(width = 60_000, height = 60_000): Promise<Buffer> {
  const small = Buffer.from(
    await sharp({ create: { width: 8, height: 8, channels: 3, background: '#888' } })
      .jpeg({ mozjpeg: false })
      .toBuffer(),
  );
  for (let i = 0; i < small.length - 9; i++) {
    if (small[i] === 0xff && (small[i + 1] === 0xc0 || small[i + 1] === 0xc2)) {
      small.writeUInt16BE(height, i + 5);
      small.writeUInt16BE(width, i + 7);
      return small;
    }
  }
  throw new Error('no SOF marker');
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(bytes: Buffer): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** A small PNG whose IHDR (with a valid checksum) claims `width`×`height` pixels. */
export async function pngBomb(width = 100_000, height = 100_000): Promise<Buffer> {
  const small = Buffer.from(await png(4, 4));
  // Signature (8) + IHDR length (4) + "IHDR" (4) + width (4) + height (4) ...; CRC after the 13 data bytes.
  small.writeUInt32BE(width, 16);
  small.writeUInt32BE(height, 20);
  small.writeUInt32BE(crc32(small.subarray(12, 29)), 29);
  return small;
}

/** Starts like a JPEG, then nothing an image decoder can read. */
export function corruptJpeg(): Buffer {
  return Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(4000, 0x5a)]);
}

export const gif = (): Buffer => Buffer.concat([Buffer.from('GIF89a'), Buffer.alloc(200, 1)]);

/** True when an EXIF block holds a GPS IFD (tag 0x8825, either byte order). */
export function hasGps(exif: Buffer | undefined): boolean {
  return !!exif && (exif.includes(Buffer.from([0x88, 0x25])) || exif.includes(Buffer.from([0x25, 0x88])));
}
