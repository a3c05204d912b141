// The channel pages' small helps: copy buttons, the e-mail provider presets
// and the website widget's live preview. The pages work without it.
(function () {
  "use strict";

  function copyButtons() {
    document.querySelectorAll("button.copy").forEach(function (button) {
      button.hidden = false;
      button.addEventListener("click", function () {
        var source = document.getElementById(button.dataset.copy);
        source.select();
        var done = function () { button.textContent = "Copied"; };
        if (navigator.clipboard) {
          navigator.clipboard.writeText(source.value).then(done, function () {
            document.execCommand("copy");
            done();
          });
        } else {
          document.execCommand("copy");
          done();
        }
      });
    });
  }

  function presets() {
    var select = document.getElementById("email-preset");
    if (!select) return;
    select.addEventListener("change", function () {
      var chosen = select.selectedOptions[0];
      if (!chosen.value) return;
      ["imap_host", "imap_security", "smtp_host", "smtp_security"].forEach(function (name) {
        var key = name.replace(/_(\w)/, function (_, c) { return c.toUpperCase(); });
        document.getElementById(name).value = chosen.dataset[key];
      });
      ["imap_port", "smtp_port"].forEach(function (name) {
        document.getElementById(name).value = "";
      });
    });
  }

  var COLOR = /^#[0-9a-fA-F]{6}$|^#[0-9a-fA-F]{3}$/;

  function preview() {
    var panel = document.getElementById("preview-panel");
    if (!panel) return;
    var heading = document.getElementById("preview-heading");
    var greeting = document.getElementById("preview-greeting");
    var launcher = document.getElementById("preview-launcher");
    var value = function (id) {
      var field = document.getElementById(id);
      return field ? field.value.trim() : "";
    };
    var color = function (id) { return COLOR.test(value(id)) ? value(id) : ""; };
    function draw() {
      // Text a person typed is shown as text, never as HTML.
      heading.textContent = value("title") || value("name") || "Chat";
      greeting.textContent = value("greeting");
      launcher.textContent = value("launcher_text") || "Chat";
      heading.style.backgroundColor = color("primary_color");
      launcher.style.backgroundColor = color("primary_color");
      panel.style.backgroundColor = color("background_color");
      panel.style.color = color("text_color");
      launcher.parentNode.classList.toggle("left", value("position") === "bottom-left");
    }
    document.querySelectorAll(".channel-form input, .channel-form select").forEach(
      function (field) { field.addEventListener("input", draw); }
    );
    draw();
  }

  copyButtons();
  presets();
  preview();
})();
