// ridge's web page: the chat and the live dashboard, one page, no network
// beyond the server that serves it.
import './style.css';
import { initApiKey } from './api.js';
import { initChat } from './chat.js';
import { initDashboard, showDashboard } from './dashboard.js';

// Tabs as in the WAI-ARIA practices: arrow keys move between them, Enter/Space or click selects.
function initTabs(onShow) {
  const tabs = [...document.querySelectorAll('[role="tab"]')];
  const select = (tab) => {
    for (const t of tabs) {
      const on = t === tab;
      t.setAttribute('aria-selected', String(on));
      t.tabIndex = on ? 0 : -1;
      document.getElementById(t.getAttribute('aria-controls')).hidden = !on;
    }
    onShow(tab.id);
  };
  tabs.forEach((tab, i) => {
    tab.addEventListener('click', () => select(tab));
    tab.addEventListener('keydown', (e) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[e.key];
      if (!step) return;
      const next = tabs[(i + step + tabs.length) % tabs.length];
      next.focus();
      select(next);
    });
  });
  const wanted = location.hash === '#dashboard' ? tabs[1] : tabs[0];
  select(wanted);
}

initApiKey();
initChat();
initDashboard();
initTabs((id) => {
  if (id === 'tab-dashboard') { history.replaceState(null, '', '#dashboard'); showDashboard(); }
  else history.replaceState(null, '', '#chat');
});
