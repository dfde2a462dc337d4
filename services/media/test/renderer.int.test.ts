import sharp from 'sharp';
import { renderImage, UnreadableImageError, type RenditionOutput } from '../src/repositories/image-renderer.repository';
import { jpeg, png } from './images';

const limits = { maxPixels: 50_000_000, timeoutSeconds: 60 };

/** A store that reads every file into memory, by `<rendition>.<format>`. */
function memoryStore() {
  const files = new Map<string, Buffer>();
  const store = async (file: RenditionOutput) => {
    const chunks: Buffer[] = [];
    for await (const chunk of file.data) chunks.push(chunk as Buffer);
    files.set(`${file.rendition}.${file.format}`, Buffer.concat(chunks));
  };
  return { files, store };
}

describe('renderImage (sharp, the rendition set streamed to a store)', () => {
  it('streams every file of the rendition set to the store, at its size and in its format', async () => {
    const { files, store } = memoryStore();
    expect(await renderImage(await jpeg(2400, 1800), 'image/jpeg', limits, store)).toEqual({
      width: 2400,
      height: 1800,
    });
    const shapes = Object.fromEntries(
      await Promise.all(
        [...files].map(async ([name, data]) => {
          const meta = await sharp(data).metadata();
          return [name, `${meta.format} ${meta.width}x${meta.height}`] as const;
        }),
      ),
    );
    expect(shapes).toEqual({
      'original.jpeg': 'jpeg 2400x1800',
      'large.jpeg': 'jpeg 1600x1200',
      'large.webp': 'webp 1600x1200',
      'thumb.jpeg': 'jpeg 320x240',
      'thumb.webp': 'webp 320x240',
    });
  });

  it('keeps a PNG a PNG at full size, and flattens its transparency in the JPEG files', async () => {
    const { files, store } = memoryStore();
    await renderImage(await png(400, 300, true), 'image/png', limits, store);
    expect((await sharp(files.get('original.png')).metadata()).hasAlpha).toBe(true);
    expect((await sharp(files.get('large.jpeg')).metadata()).channels).toBe(3);
  });

  it('blames the image for pixels that cannot be read, in our words', async () => {
    const whole = await jpeg(1200, 900, { quality: 95 });
    const { store } = memoryStore();
    const failure = renderImage(whole.subarray(0, Math.floor(whole.length / 2)), 'image/jpeg', limits, store);
    await expect(failure).rejects.toThrow(UnreadableImageError);
    await expect(failure).rejects.toThrow(/JPEG image is damaged or incomplete/);
  });

  it("passes on the store's failure as its own (the job is retried), not as a damaged image", async () => {
    const down = new Error('blob store unavailable');
    let calls = 0;
    const failing = async (file: RenditionOutput) => {
      calls++;
      // One store reads part of its file before failing, another fails before reading any.
      if (file.rendition === 'original') for await (const _ of file.data) break;
      throw down;
    };
    await expect(renderImage(await jpeg(800, 600), 'image/jpeg', limits, failing)).rejects.toBe(down);
    expect(calls).toBeGreaterThan(0);
  });
});
