import { displayedSize, sizeRefusal, sniffImageType } from './image.rules';

describe('image rules', () => {
  it('tells JPEG and PNG from their first bytes, and nothing else', () => {
    expect(sniffImageType(Buffer.from([0xff, 0xd8, 0xff, 0xdb]))).toBe('image/jpeg');
    expect(sniffImageType(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0]))).toBe('image/png');
    expect(sniffImageType(Buffer.from('GIF89a'))).toBeNull();
    expect(sniffImageType(Buffer.from([0x89, 0x50, 0x4e, 0x47]))).toBeNull();
    expect(sniffImageType(Buffer.alloc(0))).toBeNull();
  });

  it('turns the size a quarter for EXIF orientations 5 to 8 only', () => {
    expect(displayedSize(400, 300, 6)).toEqual({ width: 300, height: 400 });
    expect(displayedSize(400, 300, 8)).toEqual({ width: 300, height: 400 });
    expect(displayedSize(400, 300, 3)).toEqual({ width: 400, height: 300 });
    expect(displayedSize(400, 300, undefined)).toEqual({ width: 400, height: 300 });
  });

  it('refuses sides, pixels and shapes beyond the limits, naming the limit', () => {
    expect(sizeRefusal(1, 49_000_000, 50e6)).toMatch(/height may be at most 20000/);
    expect(sizeRefusal(30_000, 10, 50e6)).toMatch(/width may be at most 20000/);
    expect(sizeRefusal(10_000, 6_000, 50e6)).toMatch(/at most 50 megapixels/);
    expect(sizeRefusal(12_000, 200, 50e6)).toMatch(/aspect ratio may be at most 12:1/);
    expect(sizeRefusal(200, 2_401, 50e6)).toMatch(/aspect ratio/);
    for (const [w, h] of [
      [6000, 1000],
      [1000, 3000],
      [12_000, 1_000],
      [8_000, 6_000],
      [1, 1],
    ])
      expect(sizeRefusal(w, h, 50e6)).toBeNull();
  });
});
