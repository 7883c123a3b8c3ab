/**
 * One value per key object, built on first use and kept as long as the key
 * lives (a WeakMap): e.g. a capability's metrics, registered once per
 * Prometheus registry however many units of it run.
 */
export function oncePer<K extends object, V>(build: (key: K) => V): (key: K) => V {
  const made = new WeakMap<K, V>();
  return (key) => {
    let v = made.get(key);
    if (v === undefined) made.set(key, (v = build(key)));
    return v;
  };
}
