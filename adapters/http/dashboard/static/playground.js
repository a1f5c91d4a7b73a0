// Parlour playground: the message goes to the dashboard's own chat route (the session cookie and
// the CSRF header; no token in this page) and the answer is shown as its events arrive.
// Without this script the form posts to /playground and the page shows the whole answer.
(() => {
  const form = document.querySelector("form.playground-form");
  if (!form || !window.fetch || !window.TextDecoder || !window.ReadableStream) return;
  const log = document.querySelector(".playground-log");
  const problem = document.querySelector(".playground-error");
  const box = form.querySelector("textarea");
  const button = form.querySelector("button[type=submit]");
  const csrf = form.querySelector("input[name=csrf]").value;

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text; // text, never HTML: nothing in it runs
    return node;
  }

  function newTurn(text) {
    const empty = log.querySelector(".empty-history");
    if (empty) empty.remove();
    const article = element("article", "turn pending");
    const header = element("header");
    header.append(element("span", "speaker", "You"));
    const answer = element("div", "answer");
    const reply = element("p", "reply");
    answer.append(element("span", "speaker bot", "Bot"), reply);
    article.append(header, element("p", "said", text), answer);
    log.append(article);
    return { article, reply };
  }

  async function refusal(response) {
    try {
      const body = await response.json();
      if (body && body.error && body.error.message) return body.error.message;
    } catch (_) {
      // not OpenAI's error shape: say what is known
    }
    return "The bot did not answer (HTTP " + response.status + ").";
  }

  // One event's data: "" to go on, null at [DONE], else an error message.
  function take(data, shown) {
    if (data === "[DONE]") return null;
    const chunk = JSON.parse(data);
    if (chunk.error) return chunk.error.message || "The answer failed.";
    for (const choice of chunk.choices || []) {
      const delta = choice.delta || {};
      if (delta.content) shown.reply.textContent += delta.content;
      if (choice.finish_reason === "length") {
        shown.article.append(element("p", "muted small", "(cut at the length limit)"));
      }
    }
    return "";
  }

  async function read(response, shown) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffered = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return "The answer stopped before it was complete.";
      buffered += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffered.indexOf("\n\n")) !== -1) {
        const event = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        for (const line of event.split("\n")) {
          if (!line.startsWith("data:")) continue;
          const outcome = take(line.slice(5).trim(), shown);
          if (outcome === null) return "";
          if (outcome) return outcome;
        }
      }
    }
  }

  async function send(text) {
    const shown = newTurn(text);
    try {
      const response = await fetch("/playground/chat/completions", {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
        body: JSON.stringify({
          model: "parlour",
          stream: true,
          messages: [{ role: "user", content: text }],
        }),
      });
      const type = response.headers.get("Content-Type") || "";
      if (response.ok && type.startsWith("text/event-stream")) return await read(response, shown);
      if (response.redirected || type.startsWith("text/html")) {
        return "The session has ended: log in again.";
      }
      return await refusal(response);
    } catch (exc) {
      return "The bot could not be reached: " + exc.message;
    } finally {
      shown.article.classList.remove("pending");
    }
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = box.value.trim();
    if (!text || button.disabled) return;
    problem.textContent = "";
    button.disabled = true;
    box.value = "";
    try {
      problem.textContent = await send(text);
    } finally {
      button.disabled = false;
      box.focus();
    }
  });

  box.addEventListener("keydown", (event) => {
    // Enter sends; Shift+Enter is a new line
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
})();
