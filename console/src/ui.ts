/** Small pieces every view uses: the title, the heading that takes focus, error messages, dialogs. */
import { ApiError } from './api.js';
import { html } from './html.js';
import { useEffect, useRef } from './vendor/hooks.js';
import type { ComponentChildren, VNode } from './vendor/preact.js';

const PRODUCT = 'Notifications console';

export function useTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · ${PRODUCT}`;
  }, [title]);
}

/** The view's heading: where focus goes when the view changes (app.ts), so a screen reader reads it. */
export function Heading({ children }: { children: ComponentChildren }): VNode {
  return html`<h1 id="view-title" tabindex="-1">${children}</h1>`;
}

/** Anything thrown at a view, as an API error (a bug in the console is shown rather than lost). */
export function asApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  return new ApiError(0, 'CONSOLE', error instanceof Error ? error.message : String(error));
}

export const isAbort = (error: unknown) => error instanceof DOMException && error.name === 'AbortError';

/**
 * Copies `text` to the clipboard; true when it did. When the browser refuses (not a secure
 * context, or no permission), the element `id`, which shows the text, is selected instead (once
 * drawn), for the person to copy with Ctrl+C; false.
 */
export async function copyOrSelect(text: string, id: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    requestAnimationFrame(() => {
      const element = document.getElementById(id);
      if (element !== null) window.getSelection()?.selectAllChildren(element);
    });
    return false;
  }
}

/** What to do about an error that is not about one field. */
function hint(error: ApiError): string | null {
  if (error.code === 'UNAUTHENTICATED') {
    return 'The service does not know who you are: the front proxy sets the identity header on each request. Running the service yourself? Start it with NOTIFICATIONS_DEFAULT_USER set (npm start does).';
  }
  if (error.code === 'DATABASE_UNAVAILABLE') return 'The database is not answering; try again in a moment.';
  return null;
}

/**
 * An error announced when it appears (role=alert), with what to do about it when that is known.
 * `focusable`: it can be given focus (not tabbed to), which brings it into view.
 */
export function ErrorMessage({ error, id, focusable }: { error: ApiError; id?: string; focusable?: boolean }): VNode {
  const advice = hint(error);
  return html`<div class="error-box" role="alert" id=${id} tabindex=${focusable === true ? '-1' : undefined}>
    <p>${error.message}</p>
    ${advice === null ? null : html`<p>${advice}</p>`}
  </div>`;
}

/**
 * A modal confirmation (the browser's <dialog>: focus stays in it, Escape closes it). `open`
 * shows it; `onClose` hears whether the person confirmed.
 */
export function ConfirmDialog(props: {
  /** Unique on the page: names the dialog's title. */
  id: string;
  open: boolean;
  title: string;
  children: ComponentChildren;
  confirm: string;
  danger?: boolean;
  onClose: (confirmed: boolean) => void;
}): VNode {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const element = dialog.current;
    if (element === null) return;
    if (props.open && !element.open) element.showModal();
    if (!props.open && element.open) element.close();
  }, [props.open]);
  const close = (confirmed: boolean) => {
    dialog.current?.close();
    props.onClose(confirmed);
  };
  return html`<dialog ref=${dialog} id=${props.id} aria-labelledby=${`${props.id}-title`} onCancel=${() => props.onClose(false)}>
    <h2 id=${`${props.id}-title`}>${props.title}</h2>
    ${props.children}
    <div class="actions">
      <button type="button" class="secondary" autofocus onClick=${() => close(false)}>Cancel</button>
      <button type="button" class=${props.danger ? 'danger' : ''} onClick=${() => close(true)}>${props.confirm}</button>
    </div>
  </dialog>`;
}
