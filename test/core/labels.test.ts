import { expect } from 'chai';
import { selectorMatches, selectorProblem, selectorToQuery, type LabelSelector } from '../../src/core/labels.js';

describe('core/labels', () => {
  const sel: LabelSelector = {
    matchLabels: { app: 'ironic' },
    matchExpressions: [
      { key: 'tier', operator: 'In', values: ['a', 'b'] },
      { key: 'canary', operator: 'DoesNotExist' },
    ],
  };

  it('matches only labels that satisfy every term', () => {
    expect(selectorMatches(sel, { app: 'ironic', tier: 'a' })).to.equal(true);
    expect(selectorMatches(sel, { app: 'ironic', tier: 'c' })).to.equal(false);
    expect(selectorMatches(sel, { app: 'ironic' })).to.equal(false);
    expect(selectorMatches(sel, { app: 'ironic', tier: 'b', canary: '' })).to.equal(false);
    expect(selectorMatches(sel, undefined)).to.equal(false);
  });

  it('NotIn and Exists', () => {
    expect(selectorMatches({ matchExpressions: [{ key: 'x', operator: 'NotIn', values: ['1'] }] }, {})).to.equal(true);
    expect(selectorMatches({ matchExpressions: [{ key: 'x', operator: 'NotIn', values: ['1'] }] }, { x: '1' })).to.equal(false);
    expect(selectorMatches({ matchExpressions: [{ key: 'x', operator: 'Exists' }] }, { x: '' })).to.equal(true);
    expect(selectorMatches({ matchExpressions: [{ key: 'x', operator: 'Exists' }] }, {})).to.equal(false);
  });

  it('an empty selector matches everything (as in Kubernetes)', () => {
    expect(selectorMatches({}, { any: 'thing' })).to.equal(true);
  });

  it('writes the labelSelector query', () => {
    expect(selectorToQuery(sel)).to.equal('app=ironic,tier in (a,b),!canary');
    expect(selectorToQuery({ matchExpressions: [{ key: 'x', operator: 'NotIn', values: ['1', '2'] }, { key: 'y', operator: 'Exists' }] })).to.equal('x notin (1,2),y');
  });

  it('reports operators without the values they need, and values where none belong', () => {
    expect(selectorProblem({ matchExpressions: [{ key: 'x', operator: 'In', values: [] }] }, 'spec.s')).to.match(/spec\.s\.matchExpressions\[0\]\.values is empty/);
    expect(selectorProblem({ matchExpressions: [{ key: 'x', operator: 'Exists', values: ['1'] }] }, 'spec.s')).to.match(/must be empty/);
    expect(selectorProblem({ matchExpressions: [{ key: 'x', operator: 'Near' as 'In', values: ['1'] }] }, 'spec.s')).to.match(/is not In, NotIn/);
    expect(selectorProblem(sel, 'spec.s')).to.equal(undefined);
  });
});
