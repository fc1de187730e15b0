// What a program sees besides the standard built-ins: print, console,
// tools and the timers. Evaluated once per run, in the run's fresh
// context, before the program; the host's functions it is given are kept
// in this closure and are not reachable from the program by any name.
(function (hostLog, hostCall, hostTimer, hostClear, toolList, hostJobFailed) {
  "use strict";
  const toText = (v) => {
    if (typeof v === "string") return v;
    if (v === undefined) return "undefined";
    if (typeof v === "function") return "[Function" + (v.name ? ": " + v.name : "") + "]";
    if (typeof v === "symbol" || typeof v === "bigint") return String(v);
    if (v instanceof Error) return v.name + ": " + v.message;
    try {
      const s = JSON.stringify(v);
      return s === undefined ? String(v) : s;
    } catch (e) {
      return String(v);
    }
  };
  // A lone surrogate (which has no UTF-8) becomes U+FFFD on the host's
  // side, where the program cannot reach.
  const log = (...args) =>
    hostLog(args.length === 1 && typeof args[0] === "string" ? args[0] : args.map(toText).join(" "));
  const console = { log, info: log, warn: log, error: log, debug: log };
  Object.freeze(console);
  const tools = Object.create(null);
  const groups = [];
  for (const [name, json, group, member] of toolList) {
    const call = (args) => {
      const text = JSON.stringify(args === undefined ? {} : args);
      if (typeof text !== "string") {
        throw new TypeError(`tools.${member} takes its arguments as one JSON object`);
      }
      return hostCall(name, text).then(([ok, value, isJson]) => {
        if (!ok) throw new Error(value);
        if (!json && !isJson) return value;
        try {
          return JSON.parse(value);
        } catch (e) {
          return value;
        }
      });
    };
    let home = tools;
    if (group !== undefined && group !== null) {
      if (!Object.prototype.hasOwnProperty.call(tools, group)) {
        const g = Object.create(null);
        Object.defineProperty(tools, group, { value: g, enumerable: true });
        groups.push(g);
      }
      home = tools[group];
    }
    Object.defineProperty(home, member, { value: call, enumerable: true });
  }
  for (const g of groups) Object.freeze(g);
  Object.freeze(tools);
  const setTimeout = (fn, ms, ...args) => {
    if (typeof fn !== "function") throw new TypeError("setTimeout needs a function");
    const delay = Number(ms);
    return hostTimer(() => fn(...args), delay > 0 ? delay : 0);
  };
  const clearTimeout = (id) => hostClear(Number(id) || 0);
  // What a microtask throws fails the run, as a timer's error does (the
  // engine would drop it).
  const engineQueue = globalThis.queueMicrotask;
  const queueMicrotask = (fn) => {
    if (typeof fn !== "function") throw new TypeError("queueMicrotask needs a function");
    engineQueue(() => {
      try {
        fn();
      } catch (e) {
        hostJobFailed(e);
      }
    });
  };
  for (const [name, value] of Object.entries({ print: log, console, tools, setTimeout, clearTimeout, queueMicrotask })) {
    Object.defineProperty(globalThis, name, { value, writable: false, configurable: false, enumerable: false });
  }
})
