import { z } from 'zod';
import { page, pageQuery } from './common';
import { photoUrls } from './listings';
import { examples } from './examples';

/** Images a listing may hold (tours are counted separately). */
export const MAX_IMAGES_PER_LISTING = 50;
/** Virtual tours a listing may hold: links are cheap, but not unbounded. */
export const MAX_TOURS_PER_LISTING = 20;
/** Largest file accepted per image, in bytes (10 MB). */
export const MAX_IMAGE_BYTES = 10 * 1024 * 1024;
export const MAX_CAPTION_LENGTH = 1000;

export const mediaKinds = ['image', 'virtual_tour'] as const;
export const mediaKind = z.enum(mediaKinds);
export type MediaKind = z.infer<typeof mediaKind>;

export const mediaStatuses = ['processing', 'ready', 'failed'] as const;
export const mediaStatus = z.enum(mediaStatuses);
export type MediaStatus = z.infer<typeof mediaStatus>;

export const imageContentTypes = ['image/jpeg', 'image/png'] as const;
export const imageContentType = z.enum(imageContentTypes);
export type ImageContentType = z.infer<typeof imageContentType>;

const caption = z.string().trim().max(MAX_CAPTION_LENGTH);

/** A caption as a client sends it, in JSON or as the multipart text part after a file. */
export const mediaCaption = caption.describe(`Free text, up to ${MAX_CAPTION_LENGTH} characters; empty means none`);

/** A domain name as z.regexes.domain says it, its length (at most 253) checked ahead of the host rather than to `$`. */
const domainHost = `(?=[^/?#:]{1,253}(?:[/?#:]|$))${z.regexes.domain.source.replace(/^\^\(\?=[^)]*\)|\$$/g, '')}`;
/** A character of a path segment, a query or a fragment (RFC 3986), percent-encoded where it must be. */
const uriChar = `(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})`;
/** An https URL of a domain name, written as RFC 3986 has it (what `format: uri` means): also the document's pattern. */
const HTTPS_URL = new RegExp(
  `^https://${domainHost}(?::[0-9]{1,4})?(?:/${uriChar}*)*(?:\\?(?:${uriChar}|[/?])*)?(?:#(?:${uriChar}|[/?])*)?$`,
);

export const httpsUrl = z
  .url({ protocol: /^https$/, hostname: z.regexes.domain, error: 'must be an https URL' })
  .max(2048)
  .regex(HTTPS_URL, 'must be an https URL')
  .describe('An https URL of a domain name');

export const virtualTourCreate = z
  .strictObject({
    type: z.literal('virtual_tour'),
    url: httpsUrl,
    caption: mediaCaption.optional(),
  })
  .meta({ id: 'VirtualTourCreate', examples: [examples.virtualTourCreate] });
export type VirtualTourCreate = z.infer<typeof virtualTourCreate>;

/** JSON merge patch of one media item: caption (null clears it) and isPrimary. */
export const mediaPatch = z
  .strictObject({
    caption: mediaCaption.nullable().optional(),
    isPrimary: z.literal(true, { error: 'can only be set to true: make another image primary instead' }).optional(),
  })
  .meta({ id: 'MediaPatch', examples: [examples.mediaPatch] });
export type MediaPatch = z.infer<typeof mediaPatch>;

export const mediaOrder = z
  .strictObject({
    mediaIds: z
      .array(z.string().min(1).max(64))
      .describe('Every media id of the listing (tours included), each exactly once, in the new order'),
  })
  .meta({ id: 'MediaOrder', examples: [examples.mediaOrder] });
export type MediaOrder = z.infer<typeof mediaOrder>;

export const mediaParams = z.object({ id: z.string().min(1).max(64), mediaId: z.string().min(1).max(64) });

export const mediaListQuery = z.strictObject({ ...pageQuery });
export type MediaListQuery = z.infer<typeof mediaListQuery>;

export const media = z
  .object({
    id: z.string(),
    listingId: z.string(),
    kind: mediaKind,
    caption: z.string().nullable(),
    order: z.number().int().describe("Position among the listing's media, from 0"),
    isPrimary: z.boolean().describe('Exactly one image of a listing is primary; tours never are'),
    status: mediaStatus.describe('Images are `processing` until their renditions exist; tours are `ready` at once'),
    failureReason: z.string().nullable(),
    width: z.number().int().nullable().describe('Pixels as displayed, after EXIF orientation'),
    height: z.number().int().nullable(),
    bytes: z.number().int().nullable().describe('Size of the uploaded file'),
    contentType: imageContentType.nullable(),
    url: z.string().nullable().describe('The tour link (virtual tours only)'),
    urls: photoUrls
      .nullable()
      .describe(
        'Images only: public URLs (no key needed) of the full-size image, the large (≤1600 px) and thumbnail (≤320 px) renditions; JPEG, or WebP with `?format=webp`',
      ),
    version: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Media', examples: [examples.media] });
export type Media = z.infer<typeof media>;

export const mediaItems = z.object({ items: z.array(media) }).meta({ id: 'MediaItems' });
export const mediaPage = page(media).meta({ id: 'MediaPage' });

export const fileParams = z.object({
  token: z.string().min(1).max(64),
  rendition: z.string().min(1).max(32),
});
export const fileQuery = z.strictObject({ format: z.enum(['jpeg', 'webp']).optional() });

/** Why a media summary changed (for consumers that care; the listings service only needs the summary). */
export const mediaChanges = ['uploaded', 'processed', 'updated', 'reordered', 'deleted'] as const;
