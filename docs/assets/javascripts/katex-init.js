// Typeset the math that pymdownx.arithmatex (generic mode) leaves in .arithmatex elements,
// as \( ... \) inline and \[ ... \] display, with the KaTeX this site serves itself.
// The table of contents and the navigation repeat headings as plain text (a heading's math is
// its raw \( ... \) there), so their links are typeset too.
// document$ is Material's page-load observable (it also fires after instant navigation).
document$.subscribe(function () {
  var options = {
    delimiters: [
      { left: "\\(", right: "\\)", display: false },
      { left: "\\[", right: "\\]", display: true }
    ],
    throwOnError: false
  };
  document.querySelectorAll(".arithmatex").forEach(function (el) {
    renderMathInElement(el, options);
  });
  document.querySelectorAll(".md-nav__link, .md-search-result__title").forEach(function (el) {
    if (el.textContent.indexOf("\\(") >= 0) renderMathInElement(el, options);
  });
});
