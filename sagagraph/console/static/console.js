// Live updates without a build step: the sagas' tables re-read their rows, and a saga's page
// reloads when the saga moves on (unless the operator is typing in one of its forms).
(function () {
  "use strict";
  var every = Number(document.body.dataset.refreshMs) || 3000;

  function poll(fn) {
    var busy = false;
    setInterval(function () {
      if (busy || document.hidden) return;
      busy = true;
      fn().catch(function () {}).then(function () { busy = false; });
    }, every);
  }

  var rows = document.getElementById("live-rows");
  if (rows) {
    poll(function () {
      return fetch(rows.dataset.live, { headers: { Accept: "text/html" } })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) { if (html !== null) rows.innerHTML = html; });
    });
  }

  var saga = document.getElementById("saga");
  if (saga) {
    var typing = function () {
      var fields = saga.querySelectorAll("input[name=why], input[name=token]");
      for (var i = 0; i < fields.length; i++) {
        if (fields[i].value || document.activeElement === fields[i]) return true;
      }
      return false;
    };
    poll(function () {
      return fetch(saga.dataset.stamp)
        .then(function (r) { return r.json(); })
        .then(function (s) {
          var moved = s.status !== saga.dataset.status || String(s.events) !== saga.dataset.events;
          if (s.found && moved && !typing()) location.reload();
        });
    });
  }
})();
