import { ODataError } from './errors';
import { answerVersion, assertAcceptable } from './negotiation';

const refusal = (fn: () => unknown): ODataError => {
  try {
    fn();
  } catch (err) {
    if (err instanceof ODataError) return err;
    throw err;
  }
  throw new Error('not refused');
};

describe('the version of an answer', () => {
  it('is 4.01 unless the client reads no newer than 4.0', () => {
    expect(answerVersion({})).toBe('4.01');
    expect(answerVersion({ 'odata-maxversion': '4.01' })).toBe('4.01');
    expect(answerVersion({ 'odata-maxversion': '4.0' })).toBe('4.0');
    expect(answerVersion({ 'odata-maxversion': ' 4.0 ' })).toBe('4.0');
    expect(answerVersion({ 'odata-maxversion': '4' })).toBe('4.0');
    expect(answerVersion({ 'odata-maxversion': '5.0' })).toBe('4.01');
    expect(answerVersion({ 'odata-version': '4.0', 'odata-maxversion': '4.0' })).toBe('4.0');
  });

  it('refuses a client that reads only older versions, a version that is none, and requests in other versions', () => {
    expect(refusal(() => answerVersion({ 'odata-maxversion': '3.0' }))).toMatchObject({
      status: 400,
      target: 'OData-MaxVersion',
    });
    expect(refusal(() => answerVersion({ 'odata-maxversion': 'latest' })).status).toBe(400);
    expect(refusal(() => answerVersion({ 'odata-version': '3.0' }))).toMatchObject({
      status: 400,
      target: 'OData-Version',
    });
  });
});

describe('what a request accepts', () => {
  const json = (accept: string | undefined, format?: string) => () =>
    assertAcceptable({ headers: accept === undefined ? {} : { accept } }, format, 'application/json');

  it('takes JSON without an Accept header, with one that allows it, and whatever odata.metadata asks', () => {
    for (const accept of [
      undefined,
      '',
      '*/*',
      'application/*',
      'application/json',
      'application/json;odata.metadata=full',
      'application/json;odata.metadata=none;odata.streaming=true',
      'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
    ])
      expect(json(accept)).not.toThrow();
  });

  it('refuses (406) an Accept header without JSON, or with JSON at weight 0', () => {
    expect(refusal(json('application/xml'))).toMatchObject({ status: 406, code: 'NotAcceptable', target: 'Accept' });
    expect(refusal(json('text/plain, application/atom+xml')).status).toBe(406);
    expect(refusal(json('application/json;q=0, application/xml')).status).toBe(406);
  });

  it('lets $format decide over the Accept header', () => {
    expect(json('application/xml', 'json')).not.toThrow();
    expect(json(undefined, 'application/json;odata.metadata=minimal')).not.toThrow();
    expect(refusal(json('application/json', 'xml'))).toMatchObject({ status: 406, target: '$format' });
    expect(refusal(json(undefined, 'atom')).status).toBe(406);
    expect(() => assertAcceptable({ headers: { accept: 'application/json' } }, 'xml', 'application/xml')).not.toThrow();
  });
});
