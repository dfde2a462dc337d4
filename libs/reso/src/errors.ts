/**
 * An OData error (`{ error: { code, message, target?, details: [] } }`): the one kind of error body of the RESO Web API,
 * where problem+json is not what clients read.
 */
export class ODataError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly target?: string,
  ) {
    super(message);
    this.name = 'ODataError';
  }
}

export const badRequest = (message: string, target?: string): ODataError =>
  new ODataError(400, 'BadRequest', message, target);

export function odataErrorBody(error: { code: string; message: string; target?: string }) {
  return {
    error: {
      code: error.code,
      message: error.message,
      ...(error.target !== undefined ? { target: error.target } : {}),
      details: [] as unknown[],
    },
  };
}
