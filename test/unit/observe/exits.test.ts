/** observe/exits: an exit seen by inspection, laid over lists that still show the container running. */
import { expect } from 'chai';
import { listsShow, overlayExits, seenExit, type SeenExit } from '../../../src/observe/exits';
import { plan } from '../../../src/plan/planner';
import { container, input, snapshot, spec, status, statuses } from '../../support/builders';

const I = 'default';
const exited = (attempt: string, id = `id-${attempt}`): SeenExit => ({ attempt, id, state: 'exited', status: 'Exited (3)', at: 0 });

describe('observe/exits', () => {
  it('seenExit: a stopped container is an exit (its state and exit code); a running one, or a swarm run, is none', () => {
    const stopped = {
      state: 'exited',
      runState: { status: 'exited', running: false, oomKilled: false, exitCode: 3, error: '', startedAt: '', finishedAt: '', pid: 0 },
    };
    expect(seenExit('a', 'id-a', stopped, 7)).to.deep.equal({ attempt: 'a', id: 'id-a', state: 'exited', status: 'Exited (3)', at: 7 });
    expect(seenExit('a', 'id-a', { ...stopped, state: 'dead' }, 7)?.state).to.equal('dead');
    expect(seenExit('a', 'id-a', { state: 'running', runState: { ...stopped.runState, status: 'running', running: true } }, 7)).to.equal(undefined);
    // a backend that says `running` in the state but not in runState (or the reverse) still runs
    expect(seenExit('a', 'id-a', { state: 'running', runState: stopped.runState }, 7)).to.equal(undefined);
    expect(seenExit('a', 'id-a', { state: 'exited', runState: { ...stopped.runState, running: true } }, 7)).to.equal(undefined);
    // a swarm run: its end is its task's, as the manager lists it (and its logs come from there)
    expect(seenExit('a', 'id-a@node', { ...stopped, placement: { service: 's', node: 'node', nodeName: 'n' } }, 7)).to.equal(undefined);
  });

  it('lays an exit over the container it names while the lists show it running, and nothing else', () => {
    const s = snapshot({ containers: [container(I, 'a', 'h-a'), container(I, 'a', 'h-a', { id: 'id-side', name: 'side' }), container(I, 'b', 'h-b')] });
    const out = overlayExits(s, [exited('a')]);
    expect(out.attempts.get('a')?.containers.map((c) => [c.id, c.state, c.status])).to.deep.equal([
      ['id-a', 'exited', 'Exited (3)'],
      ['id-side', 'running', 'Up'],
    ]);
    expect(out.attempts.get('b')).to.equal(s.attempts.get('b'));
    // the input is left as it was (the controller keeps its lists as listed)
    expect(s.attempts.get('a')?.containers[0]?.state).to.equal('running');
    expect([out.at, out.calls, out.foreign]).to.deep.equal([s.at, s.calls, s.foreign]);
  });

  it('never makes a stopped container run, and leaves a snapshot without the container (or the attempt) as it is', () => {
    const s = snapshot({ containers: [container(I, 'a', 'h-a', { state: 'created' }), container(I, 'b', 'h-b', { state: 'exited', status: 'Exited (0)' })] });
    expect(overlayExits(s, [exited('a'), { ...exited('b'), state: 'dead', status: 'dead' }, exited('c'), exited('a', 'id-other')])).to.equal(s);
  });

  it('listsShow: the lists caught up once they show the container not running, or not at all', () => {
    const running = snapshot({ containers: [container(I, 'a', 'h-a')] });
    expect(listsShow(running, exited('a'))).to.equal(false);
    expect(listsShow(snapshot({ containers: [container(I, 'a', 'h-a', { state: 'exited' })] }), exited('a'))).to.equal(true);
    expect(listsShow(snapshot({}), exited('a'))).to.equal(true);
  });

  it('the planner finishes the attempt from the overlaid snapshot, and only waits on the listed one', () => {
    const listed = snapshot({ containers: [container(I, 'a', 'h-a')] });
    const inp = { specs: [spec('a')], statuses: statuses(status('a')) };
    expect(plan(input({ ...inp, snapshot: listed })).actions[0]?.kind).to.not.equal('finish');
    const p = plan(input({ ...inp, snapshot: overlayExits(listed, [exited('a')]) }));
    expect(p.actions[0]?.kind).to.equal('finish');
    expect(p.actions[0]?.ops.map((o) => `${o.type} ${o.resource}`)).to.deep.equal(['finish container:berth_default_a']);
  });
});
