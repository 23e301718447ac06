// Model output as Markdown, made safe twice: raw HTML in the text is shown
// as text (marked's html tokens are escaped, so "<script>" reads as such),
// and DOMPurify then removes anything that could still run (event handlers,
// javascript: links) before it reaches the page.
import DOMPurify from 'dompurify';
import { Marked, Renderer } from 'marked';

const escapes = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeHtml = (text) => text.replace(/[&<>"']/g, (c) => escapes[c]);

const renderer = new Renderer();
renderer.html = ({ text }) => escapeHtml(text);
const markdown = new Marked({ gfm: true, breaks: true, renderer });

// Links open elsewhere and never with this page as their opener.
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

export function renderMarkdown(element, text) {
  const html = markdown.parse(text, { async: false });
  element.innerHTML = DOMPurify.sanitize(html, { USE_PROFILES: { html: true } });
}
