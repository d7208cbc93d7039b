/**
 * Tiny DOM builders. Report data only ever reaches the page through
 * `textContent` and through attribute values set with `setAttribute`; nothing
 * here parses HTML, and attribute names are fixed by this code, never by data.
 */

export type Child = Node | string | number | null | undefined | false;

export interface IAttrs {
  [name: string]: string | number | boolean | null | undefined;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

function setAttrs(el: Element, attrs: IAttrs | undefined): void {
  if (!attrs) {
    return;
  }
  for (const [name, value] of Object.entries(attrs)) {
    // Event handler attributes would run text as code: refuse them outright.
    if (/^on/i.test(name)) {
      throw new Error(`refusing to set event handler attribute ${name}`);
    }
    if (value === null || value === undefined || value === false) {
      continue;
    }
    el.setAttribute(name, value === true ? '' : String(value));
  }
}

function append(el: Element, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) {
      continue;
    }
    if (typeof child === 'string' || typeof child === 'number') {
      el.appendChild(document.createTextNode(String(child)));
    } else {
      el.appendChild(child);
    }
  }
}

/** An HTML element; string children become text nodes. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: IAttrs | null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  setAttrs(el, attrs ?? undefined);
  append(el, children);
  return el;
}

/** An SVG element; string children become text nodes. */
export function s<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs?: IAttrs | null,
  ...children: Child[]
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs ?? undefined);
  append(el, children);
  return el;
}

/** Remove every child of a node. */
export function clear(node: Node): void {
  while (node.firstChild) {
    node.removeChild(node.firstChild);
  }
}

let counter = 0;

/** A document-unique id for aria links between elements. */
export function uid(prefix: string): string {
  counter += 1;
  return `${prefix}-${counter}`;
}
