// Every string handed to Plotly goes through plotlyText first. Plotly draws a subset of
// HTML in all the text it shows (trace names and legends, category tick labels, hover
// text): <a href> becomes a clickable SVG link, <b>, <i>, <br>, <sub>, <sup> and
// <span style> change the drawing. Build versions, labels, function and thread names come
// from uploads, so their markup must stay text. Plotly splits text at its tags, then
// decodes &amp; &lt; &gt; (and numeric references) once in the pieces between them, so
// these three entities show the original characters and make no tag.
"use strict";

export function plotlyText(value) {
  return String(value).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
