import { Readable } from 'node:stream';
import sharp from 'sharp';
import {
  ImageRendererRepository,
  renderImage,
  UnreadableImageError,
  type RenditionOutput,
} from '../src/repositories/image-renderer.repository';
import { RenderThreadLost, RenderThreads } from '../src/repositories/render-thread';
import { renditionRecipe } from '../src/repositories/rendition-pipeline';
import type { RenditionSpec } from '../src/image.rules';
import { eventually } from '@estate/testing';
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

describe('ImageRendererRepository.render (the same files, made in a render thread)', () => {
  const renderer = new ImageRendererRepository({
    maxPixels: limits.maxPixels,
    pipelines: 1,
    threadsPerPipeline: 1,
    renderTimeoutSeconds: limits.timeoutSeconds,
  });
  const stored = (file: Buffer) => ({ stream: Readable.from([file]), size: file.length });
  afterAll(() => renderer.stop());

  it('stores byte for byte the files renderImage makes in this thread', async () => {
    const image = await jpeg(1800, 1200, { orientation: 6 });
    const here = memoryStore();
    const size = await renderImage(image, 'image/jpeg', limits, here.store);
    const there = memoryStore();
    expect(await renderer.render(stored(image), 'image/jpeg', image.length, there.store)).toEqual(size);
    expect(size).toEqual({ width: 1200, height: 1800 });
    expect([...there.files.keys()].sort()).toEqual([...here.files.keys()].sort());
    for (const [name, data] of here.files) expect(there.files.get(name)?.equals(data)).toBe(true);

    const transparent = await png(400, 300, true);
    const pngHere = memoryStore();
    await renderImage(transparent, 'image/png', limits, pngHere.store);
    const pngThere = memoryStore();
    await renderer.render(stored(transparent), 'image/png', transparent.length, pngThere.store);
    for (const [name, data] of pngHere.files) expect(pngThere.files.get(name)?.equals(data)).toBe(true);
  });

  it('blames the image for pixels that cannot be read, and renders the next image', async () => {
    const whole = await jpeg(1200, 900, { quality: 95 });
    const cut = whole.subarray(0, Math.floor(whole.length / 2));
    const failure = renderer.render(stored(cut), 'image/jpeg', cut.length, memoryStore().store);
    await expect(failure).rejects.toThrow(UnreadableImageError);
    await expect(failure).rejects.toThrow(/JPEG image is damaged or incomplete/);
    const { files, store } = memoryStore();
    await renderer.render(stored(whole), 'image/jpeg', whole.length, store);
    expect(files.size).toBe(5);
  });

  it("passes on the store's failure as its own, and renders the next image", async () => {
    const image = await jpeg(800, 600);
    const down = new Error('blob store unavailable');
    const failing = async (file: RenditionOutput) => {
      if (file.rendition === 'original') for await (const _ of file.data) break;
      throw down;
    };
    await expect(renderer.render(stored(image), 'image/jpeg', image.length, failing)).rejects.toBe(down);
    const { files, store } = memoryStore();
    await renderer.render(stored(image), 'image/jpeg', image.length, store);
    expect(files.size).toBe(5);
  });

  it("fails a render whose thread ends under it as not the image's fault, and starts a new thread for the next", async () => {
    const image = await jpeg(2400, 1800);
    let stopping: Promise<void> | undefined;
    const stopsMidway = async (file: RenditionOutput) => {
      // The thread is ended while it is still encoding this image's files.
      stopping ??= renderer.stop();
      for await (const _ of file.data) void _;
    };
    const lost = renderer.render(stored(image), 'image/jpeg', image.length, stopsMidway);
    await expect(lost).rejects.toThrow(RenderThreadLost);
    await expect(lost).rejects.not.toThrow(UnreadableImageError);
    await stopping;
    const { files, store } = memoryStore();
    await renderer.render(stored(image), 'image/jpeg', image.length, store);
    expect(files.size).toBe(5);
  });
});

describe('RenderThreads', () => {
  it('ends a thread that stays idle, and starts one for the next render', async () => {
    const threads = new RenderThreads(50);
    const image = await jpeg(400, 300);
    const sink = () => {
      const { files, store } = memoryStore();
      return {
        files,
        open: (spec: RenditionSpec, data: Readable) => store({ ...spec, contentType: 'image/*', data }),
        imageFailed: (err: Error) => {
          throw err;
        },
      };
    };
    try {
      const first = sink();
      expect(await threads.render(image, renditionRecipe('image/jpeg', limits), first)).toEqual({
        width: 400,
        height: 300,
      });
      expect(threads.size).toBe(1);
      await eventually(() => expect(threads.size).toBe(0));
      const next = sink();
      expect(await threads.render(image, renditionRecipe('image/jpeg', limits), next)).toEqual({
        width: 400,
        height: 300,
      });
      await eventually(() => expect(next.files.size).toBe(5));
    } finally {
      await threads.stop();
    }
  });
});
