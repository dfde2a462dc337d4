import Negotiator from 'negotiator';
import { ODataError } from './errors';

/** The OData versions this service answers in. */
export type ODataVersion = '4.0' | '4.01';

const single = (value: string | string[] | undefined): string | undefined =>
  Array.isArray(value) ? value.join(',') : value;

/** `4.0`, `4.01`, `5` as [major, minor]; undefined for anything else. */
function versionOf(raw: string): [number, number] | undefined {
  const m = /^\s*(\d{1,3})(?:\.(\d{1,3}))?\s*$/.exec(raw);
  return m ? [Number(m[1]), Number(m[2] ?? 0)] : undefined;
}

/**
 * The version of an answer (OData 4.01 Part 1, 8.1.5 and 8.2.7): 4.01, or 4.0 for a client whose
 * `OData-MaxVersion` is 4.0, since an answer is never newer than that. Both versions' answers are the same
 * JSON here. A client that reads only versions before 4.0, or names a version that is none, is refused, and
 * so is a request that says it is written in a version other than 4.0 or 4.01 (`OData-Version`).
 */
export function answerVersion(headers: Record<string, string | string[] | undefined>): ODataVersion {
  const written = single(headers['odata-version']);
  if (written !== undefined && !['4.0', '4.01'].includes(written.trim()))
    throw new ODataError(
      400,
      'BadRequest',
      `The request says it is OData ${written}; this service reads OData 4.0 and 4.01`,
      'OData-Version',
    );
  const max = single(headers['odata-maxversion']);
  if (max === undefined) return '4.01';
  const version = versionOf(max);
  if (!version)
    throw new ODataError(
      400,
      'BadRequest',
      `OData-MaxVersion must be a version such as 4.0 or 4.01`,
      'OData-MaxVersion',
    );
  const [major, minor] = version;
  if (major < 4)
    throw new ODataError(
      400,
      'BadRequest',
      `OData-MaxVersion ${max.trim()} is older than every version this service answers in (4.0 and 4.01)`,
      'OData-MaxVersion',
    );
  return major === 4 && minor < 1 ? '4.0' : '4.01';
}

/** `$format`'s short names, and media types without their parameters. */
function formatType(format: string): string {
  const type = format.split(';')[0].trim().toLowerCase();
  return type === 'json' ? 'application/json' : type === 'xml' ? 'application/xml' : type;
}

/**
 * Refuses (406) an answer in `type` that the request does not take: its `$format`, which overrides the Accept
 * header (OData 4.01 Part 2, 5.1.8), else its Accept header. Only the media type decides: a JSON answer carries
 * minimal metadata whatever `odata.metadata` asked, and says so in its Content-Type.
 */
export function assertAcceptable(
  request: { headers: Record<string, string | string[] | undefined> },
  format: string | undefined,
  type: 'application/json' | 'application/xml',
): void {
  if (format !== undefined) {
    if (formatType(format) === type) return;
    throw new ODataError(406, 'NotAcceptable', `$format ${format}: this resource is served as ${type} only`, '$format');
  }
  const accept = single(request.headers.accept);
  if (accept === undefined || accept.trim() === '') return;
  // Parameters other than the weight are left out: `application/json;odata.metadata=full` asks for JSON.
  const ranges = accept
    .split(',')
    .map((range) => {
      const [media, ...params] = range.split(';');
      const weight = params.find((p) => /^\s*q\s*=/i.test(p));
      return weight ? `${media.trim()};${weight.trim()}` : media.trim();
    })
    .join(', ');
  if (new Negotiator({ headers: { accept: ranges } }).mediaType([type]) === undefined)
    throw new ODataError(
      406,
      'NotAcceptable',
      `This resource is served as ${type}, which the Accept header (${accept.slice(0, 100)}) does not take`,
      'Accept',
    );
}
