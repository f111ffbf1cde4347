/**
 * A test's body, then its teardown (stop what it started, clean, assert that the clean worked):
 * the teardown runs whether the body failed or not. A `finally` that asserts would replace the
 * body's error with its own when both fail, and the report would show the clean's failure, a
 * consequence, instead of the first, real one; here the body's error is the one thrown, the
 * teardown's failure added to its message. A teardown that fails alone throws as it is.
 */
export async function thenTearDown<T>(body: () => Promise<T>, teardown: () => Promise<void>): Promise<T> {
  let value: T;
  try {
    value = await body();
  } catch (err) {
    let later: unknown;
    try {
      await teardown();
    } catch (e) {
      later = e;
    }
    if (later === undefined) throw err;
    throw withLater(err, later);
  }
  await teardown();
  return value;
}

/** The body's error, its message telling the teardown's failure too (the same Error kept: its stack, and an assertion's expected and actual). */
function withLater(err: unknown, later: unknown): Error {
  const said = `\n(and then the teardown failed too: ${later instanceof Error ? later.message : String(later)})`;
  if (err instanceof Error) {
    err.message += said;
    return err;
  }
  return new Error(`${String(err)}${said}`, { cause: err });
}
