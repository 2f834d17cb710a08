// JSON from our own endpoints, with the session cookie; a failed answer is an error.
"use strict";

export async function getJSON(url, params) {
  const q = params && params.toString();
  const response = await fetch(q ? `${url}?${q}` : url, {headers: {Accept: "application/json"},
                                                      credentials: "same-origin"});
  if (!response.ok) throw new Error(`${response.status}`);
  return response.json();
}
