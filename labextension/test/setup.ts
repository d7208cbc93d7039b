// jsdom has no DragEvent, which @lumino/dragdrop extends at import time.
if (typeof (globalThis as any).DragEvent === 'undefined') {
  (globalThis as any).DragEvent = class DragEvent extends MouseEvent {};
}
