/** Put text on the clipboard, with a fallback for pages without the async clipboard API. */
export async function copyText(text: string): Promise<void> {
  if (typeof navigator !== 'undefined' && navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(text);
      return;
    } catch {
      // Permission refused (e.g. an unfocused page): try the old way below.
    }
  }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.top = '-1000px';
  document.body.appendChild(area);
  try {
    area.select();
    if (!document.execCommand || !document.execCommand('copy')) {
      throw new Error('the browser refused to copy');
    }
  } finally {
    document.body.removeChild(area);
  }
}
