/**
 * Kubernetes label selectors (metav1.LabelSelector): matching labels against
 * one, and writing one as the `labelSelector` query string. Pure.
 */

export interface LabelSelectorRequirement {
  readonly key: string;
  readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  readonly values?: readonly string[];
}

export interface LabelSelector {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: readonly LabelSelectorRequirement[];
}

/** Whether `labels` satisfy every term of `selector` (an empty selector matches everything, as in Kubernetes). */
export function selectorMatches(selector: LabelSelector, labels: Readonly<Record<string, string>> | undefined): boolean {
  const l = labels ?? {};
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (l[k] !== v) return false;
  for (const r of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(l, r.key);
    const values = r.values ?? [];
    switch (r.operator) {
      case 'In':
        if (!has || !values.includes(l[r.key]!)) return false;
        break;
      case 'NotIn':
        if (has && values.includes(l[r.key]!)) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

/** The selector as the API server's `labelSelector` query parameter (`a=b,c in (d,e),!f`). */
export function selectorToQuery(selector: LabelSelector): string {
  const terms = Object.entries(selector.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const r of selector.matchExpressions ?? []) {
    const values = [...(r.values ?? [])].join(',');
    if (r.operator === 'In') terms.push(`${r.key} in (${values})`);
    else if (r.operator === 'NotIn') terms.push(`${r.key} notin (${values})`);
    else if (r.operator === 'Exists') terms.push(r.key);
    else terms.push(`!${r.key}`);
  }
  return terms.join(',');
}

/** Why a selector cannot be used, or undefined: operators, and values only where the operator takes them. */
export function selectorProblem(selector: LabelSelector, field: string): string | undefined {
  for (const [i, r] of (selector.matchExpressions ?? []).entries()) {
    const f = `${field}.matchExpressions[${i}]`;
    if (!['In', 'NotIn', 'Exists', 'DoesNotExist'].includes(r.operator)) return `${f}.operator ${JSON.stringify(r.operator)} is not In, NotIn, Exists or DoesNotExist`;
    const n = r.values?.length ?? 0;
    if ((r.operator === 'In' || r.operator === 'NotIn') && n === 0) return `${f}.values is empty; ${r.operator} needs at least one value`;
    if ((r.operator === 'Exists' || r.operator === 'DoesNotExist') && n > 0) return `${f}.values must be empty for ${r.operator}`;
  }
  return undefined;
}
