/** Compiler-style error formatting: headline, source excerpt, caret; safe for terminals. */
import { expect } from 'chai';
import { errorHeadline, excerpt, formatError, formatErrors } from '../../../src/cli/format-errors';
import type { SpecError } from '../../../src/spec/types';

const err = (over: Partial<SpecError> = {}): SpecError => ({
  file: 'specs/a.yaml',
  line: 3,
  col: 5,
  path: 'spec.image',
  code: 'schema',
  message: 'must not be empty',
  ...over,
});

describe('cli/format-errors', () => {
  it('writes file:line:col: path: message [code]', () => {
    expect(errorHeadline(err())).to.equal('specs/a.yaml:3:5: spec.image: must not be empty [schema]');
    expect(errorHeadline(err({ path: '' }))).to.equal('specs/a.yaml:3:5: must not be empty [schema]');
  });

  it('adds the source line and a caret under the column', () => {
    const lines = ['a', 'b', '  x: y'];
    expect(formatError(err(), (_f, n) => lines[n - 1])).to.equal('specs/a.yaml:3:5: spec.image: must not be empty [schema]\n 3 |   x: y\n   |     ^');
  });

  it('keeps tabs so the caret lines up, and neutralizes control characters', () => {
    expect(excerpt('\tab\u001b[31mc', 12, 4)).to.deep.equal([' 12 | \tab\ufffd[31mc', '    | \t  ^']);
  });

  it('shows a window around the column of a very long line', () => {
    const line = `${'a'.repeat(500)}X${'b'.repeat(500)}`;
    const [src, caret] = excerpt(line, 1, 501);
    expect(src?.length).to.be.lessThan(140);
    expect(src).to.include('…');
    expect(src?.indexOf('X')).to.equal(caret?.indexOf('^'));
  });

  it('puts the caret at the end when the column is past it', () => {
    expect(excerpt('ab', 1, 10)).to.deep.equal([' 1 | ab', '   |   ^']);
  });

  it('skips the excerpt when the line cannot be read, or for io and too-large errors', () => {
    expect(formatError(err(), () => undefined)).to.equal('specs/a.yaml:3:5: spec.image: must not be empty [schema]');
    expect(
      formatError(err(), () => {
        throw new Error('boom');
      }),
    ).to.equal('specs/a.yaml:3:5: spec.image: must not be empty [schema]');
    let asked = false;
    formatError(err({ code: 'too-large' }), () => {
      asked = true;
      return 'x';
    });
    expect(asked).to.equal(false);
  });

  it('joins errors with newlines and returns nothing for no errors', () => {
    expect(formatErrors([])).to.equal('');
    expect(formatErrors([err(), err({ line: 4 })])).to.equal(
      'specs/a.yaml:3:5: spec.image: must not be empty [schema]\nspecs/a.yaml:4:5: spec.image: must not be empty [schema]\n',
    );
  });
});
