// Model output as Markdown, made safe: marked renders it, DOMPurify removes
// anything that could run (scripts, event handlers, javascript: links)
// before it reaches the page.
import DOMPurify from 'dompurify';
import { marked } from 'marked';

marked.setOptions({ gfm: true, breaks: true });

// Links open elsewhere and never with this page as their opener.
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

export function renderMarkdown(element, text) {
  const html = marked.parse(text, { async: false });
  element.innerHTML = DOMPurify.sanitize(html, { USE_PROFILES: { html: true }, FORBID_TAGS: ['style', 'form', 'input'] });
}
