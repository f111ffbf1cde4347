/** kubectl's JSONPath subset for get -o jsonpath, custom-columns and --sort-by. */
import { expect } from 'chai';
import { cellText, JsonPathError, parseCustomColumns, parsePath, parseTemplate, renderTemplate, sortByPath } from '../../../src/cli/jsonpath';

const LIST = {
  kind: 'List',
  items: [
    { metadata: { name: 'b', labels: { 'app.x/y': '1' } }, status: { phase: 'Failed', exitCode: 3 } },
    { metadata: { name: 'a', labels: {} }, status: { phase: 'Succeeded', exitCode: 0 } },
  ],
};
const t = (tpl: string) => renderTemplate(parseTemplate(tpl), LIST);

describe('jsonpath', function () {
  it("kubectl's forms: paths, [*], indexes, slices, quoted keys, range, literals", function () {
    expect(t('{.items[*].metadata.name}')).to.equal('b a');
    expect(t('.items[*].metadata.name')).to.equal('b a');
    expect(t('{.items[0].status.exitCode}')).to.equal('3');
    expect(t('{.items[-1].metadata.name}')).to.equal('a');
    expect(t('{.items[0:1].metadata.name}')).to.equal('b');
    expect(t("{.items[0].metadata.labels['app.x/y']}")).to.equal('1');
    expect(t('{range .items[*]}{.metadata.name}{"\\t"}{.status.phase}{"\\n"}{end}')).to.equal('b\tFailed\na\tSucceeded\n');
    expect(t('{.items[0].status}')).to.equal('{"phase":"Failed","exitCode":3}');
    expect(t('{.kind}: {.nope}')).to.equal('List: ');
    expect(t('{$.kind}')).to.equal('List');
  });

  it('what is not supported says so', function () {
    for (const bad of ['{.items[?(@.x)]}', '{..name}', '{.items[0,1]}', '{.items', '{range .items[*]}{.a}', '{end}']) {
      expect(() => t(bad), bad).to.throw(JsonPathError);
    }
  });

  it('custom-columns and sort-by', function () {
    const cols = parseCustomColumns('NAME:.metadata.name,EXIT:.status.exitCode,X:.nope');
    expect(cols.map((c) => cellText(c.path, LIST.items[0]))).to.deep.equal(['b', '3', '<none>']);
    expect(() => parseCustomColumns('NAME')).to.throw(JsonPathError);
    expect(sortByPath(LIST.items, parsePath('.metadata.name'), (x) => x).map((i) => i.metadata.name)).to.deep.equal(['a', 'b']);
    expect(sortByPath(LIST.items, parsePath('.status.exitCode'), (x) => x).map((i) => i.status.exitCode)).to.deep.equal([0, 3]);
  });
});
