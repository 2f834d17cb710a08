// JSON from our own endpoints, with the session cookie; a failed answer is an error
// carrying its status and the server's message ({"error": "..."}) when it sent one.
"use strict";

export async function getJSON(url, params) {
  const q = params && params.toString();
  const response = await fetch(q ? `${url}?${q}` : url, {headers: {Accept: "application/json"},
                                                      credentials: "same-origin"});
  if (!response.ok) {
    const body = await response.json().catch(() => ({}));
    const error = new Error(body.error || `${response.status}`);
    error.status = response.status;
    throw error;
  }
  return response.json();
}
