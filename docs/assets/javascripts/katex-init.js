// Typeset the math that pymdownx.arithmatex (generic mode) leaves in .arithmatex elements,
// as \( ... \) inline and \[ ... \] display, with the KaTeX this site serves itself.
// document$ is Material's page-load observable (it also fires after instant navigation).
document$.subscribe(function () {
  document.querySelectorAll(".arithmatex").forEach(function (el) {
    renderMathInElement(el, {
      delimiters: [
        { left: "\\(", right: "\\)", display: false },
        { left: "\\[", right: "\\]", display: true }
      ],
      throwOnError: false
    });
  });
});
