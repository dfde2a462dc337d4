import { mediaSummary, permutationProblem, reordered, withOnePrimary, type MediaItem } from './gallery.rules';

const at = '2026-01-01T00:00:00.000Z';
const image = (id: string, over: Partial<MediaItem> = {}): MediaItem => ({
  id,
  kind: 'image',
  status: 'ready',
  isPrimary: false,
  fileToken: `tok_${id}`.padEnd(22, 'x'),
  version: 1,
  createdAt: at,
  updatedAt: at,
  ...over,
});
const tour = (id: string): MediaItem => ({
  id,
  kind: 'virtual_tour',
  url: `https://t.example.com/${id}`,
  status: 'ready',
  isPrimary: false,
  version: 1,
  createdAt: at,
  updatedAt: at,
});
const primaries = (items: MediaItem[]) => items.filter((i) => i.isPrimary).map((i) => i.id);

describe('gallery rules', () => {
  it('makes the first image primary when none is, never a tour or a slot still uploading', () => {
    expect(primaries(withOnePrimary([tour('t'), image('u', { status: 'uploading' }), image('a'), image('b')]))).toEqual(
      ['a'],
    );
    expect(primaries(withOnePrimary([tour('t')]))).toEqual([]);
    expect(primaries(withOnePrimary([]))).toEqual([]);
  });

  it('keeps the current primary, and leaves exactly one when several claim it', () => {
    expect(primaries(withOnePrimary([image('a'), image('b', { isPrimary: true })]))).toEqual(['b']);
    expect(primaries(withOnePrimary([image('a', { isPrimary: true }), image('b', { isPrimary: true })]))).toEqual([
      'a',
    ]);
  });

  it('moves the flag off a failed image to the first that did not fail, but keeps it when all failed', () => {
    expect(
      primaries(
        withOnePrimary([
          image('a', { isPrimary: true, status: 'failed' }),
          image('b', { status: 'failed' }),
          image('c', { status: 'processing' }),
        ]),
      ),
    ).toEqual(['c']);
    expect(
      primaries(withOnePrimary([image('a', { status: 'failed' }), image('b', { isPrimary: true, status: 'failed' })])),
    ).toEqual(['b']);
  });

  it('accepts only a permutation of the shown ids', () => {
    const items = [image('a'), tour('t'), image('u', { status: 'uploading' })];
    expect(permutationProblem(items, ['t', 'a'])).toBeNull();
    expect(permutationProblem(items, ['a'])).toMatch(/missing: t/);
    expect(permutationProblem(items, ['a', 't', 'u'])).toMatch(/does not have: u/);
    expect(permutationProblem(items, ['a', 'a', 't'])).toMatch(/more than once/);
  });

  it('reorders the shown items and keeps uploading slots after them', () => {
    const items = [image('a'), image('u', { status: 'uploading' }), tour('t')];
    expect(reordered(items, ['t', 'a']).map((i) => i.id)).toEqual(['t', 'a', 'u']);
  });

  it('summarises ready images, the primary once ready, and tours in order', () => {
    const items = [
      tour('t1'),
      image('a', { isPrimary: true, status: 'processing' }),
      image('b', { caption: 'Kitchen' }),
      image('c', { status: 'failed' }),
      tour('t2'),
    ];
    expect(mediaSummary(items)).toEqual({
      photoCount: 1,
      primaryPhoto: null,
      virtualTours: [
        { id: 't1', url: 'https://t.example.com/t1', caption: null },
        { id: 't2', url: 'https://t.example.com/t2', caption: null },
      ],
    });
    const ready = mediaSummary([image('a', { isPrimary: true, caption: 'Front' })]);
    expect(ready.primaryPhoto).toEqual({
      id: 'a',
      urls: {
        original: `/files/${'tok_a'.padEnd(22, 'x')}/original`,
        large: `/files/${'tok_a'.padEnd(22, 'x')}/large`,
        thumb: `/files/${'tok_a'.padEnd(22, 'x')}/thumb`,
      },
      caption: 'Front',
    });
  });
});
