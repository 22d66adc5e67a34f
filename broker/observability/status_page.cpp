// GET /ojs/status: the overview rendered as one self-contained HTML page
// (inline CSS, no scripts, no external assets; a meta refresh reloads it).
#include "broker/observability/overview.hpp"

#include <algorithm>

namespace ojs::broker::obs {

using nlohmann::json;

namespace {

constexpr int kRefreshSeconds = 5;

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string text_of(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::string age(double seconds) {
  if (seconds < 0) return "never";
  if (seconds < 1) return "just now";
  if (seconds < 120) return std::to_string(static_cast<long long>(seconds)) + " s ago";
  if (seconds < 7200) return std::to_string(static_cast<long long>(seconds / 60)) + " min ago";
  return std::to_string(static_cast<long long>(seconds / 3600)) + " h ago";
}

// "gpu_count=8, gpu_type=nvidia-h100" from a class's canonical ext_ml_* document.
std::string requirements_text(const json& req) {
  if (!req.is_object() || req.empty()) return "no constraints";
  std::string out;
  for (const auto& [key, value] : req.items()) {
    if (!out.empty()) out += ", ";
    out += key.rfind("ext_ml_", 0) == 0 ? key.substr(7) : key;
    out += '=';
    out += text_of(value);
  }
  if (out.size() > 140) out = out.substr(0, 137) + "...";
  return out;
}

std::string cell(const std::string& html, const char* cls = nullptr) {
  return cls ? "<td class=\"" + std::string(cls) + "\">" + html + "</td>" : "<td>" + html + "</td>";
}

std::string num(const json& v) { return cell(v.is_number() ? v.dump() : "0", "n"); }

// A small bar: filled part = in use.
std::string gpu_bar(long long used, long long total) {
  if (total <= 0) return cell("<span class=\"muted\">no GPUs</span>");
  const long long pct = used * 100 / total;
  return cell("<div class=\"bar\"><i style=\"width:" + std::to_string(pct) + "%\"></i></div> " + std::to_string(total - used) +
              " free / " + std::to_string(total));
}

const char* kStyle = R"(
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2330;background:#f5f6f8}
header{background:#1d2330;color:#fff;padding:14px 24px;display:flex;align-items:baseline;gap:16px}
header h1{font-size:18px;margin:0}header span{color:#aab2c0;font-size:12px}
main{padding:8px 24px 24px}
.cards{display:flex;gap:12px;margin:12px 0}
.card{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:10px 16px;min-width:130px}
.card b{display:block;font-size:22px}.card span{color:#5b6475;font-size:12px}
h2{font-size:15px;margin:18px 0 6px}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid #dde1e7}
th,td{text-align:left;padding:6px 10px;border-bottom:1px solid #edf0f3;vertical-align:top}
th{background:#f0f2f5;font-weight:600;font-size:12px;color:#5b6475}th.n{text-align:right}
td.n{text-align:right;font-variant-numeric:tabular-nums}
td.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
.pill{border-radius:9px;padding:1px 8px;font-size:12px;background:#e3f5e8;color:#17663a}
.pill.quiet,.pill.paused{background:#fff4d6;color:#8a5a00}.pill.terminate,.pill.lost{background:#fde4e4;color:#9b1c1c}
.bar{display:inline-block;width:80px;height:8px;background:#e3e7ed;border-radius:4px;vertical-align:middle;overflow:hidden}
.bar i{display:block;height:100%;background:#3b82f6}
.muted{color:#8b93a3}.why{color:#9b1c1c}
)";

// "device 3 (1g.10gb): xid 79: GPU has fallen off the bus", one line per unhealthy device.
std::string health_cell(const json& unhealthy) {
  if (unhealthy.empty()) return cell("<span class=\"muted\">ok</span>");
  std::string lines;
  for (const auto& d : unhealthy) {
    std::string what = "device " + d.value("index", json(-1)).dump();
    if (d.contains("mig_profile")) what += " (" + text_of(d["mig_profile"]) + ")";
    lines += (lines.empty() ? "" : "<br>") + escape(what + ": " + text_of(d["reason"]));
  }
  return cell(lines, "why");
}

std::string view_link(const StatusPageView& view, const std::string& workers, int page, const std::string& text, bool current) {
  if (current) return "<b>" + text + "</b>";
  return "<a href=\"/ojs/status?workers=" + workers + "&amp;page=" + std::to_string(page) + "&amp;per_page=" +
         std::to_string(view.per_page) + "\">" + text + "</a>";
}

// The workers of the view's filter (in the overview's order),
// one page of them, with the filter and page links.
std::string workers_table(const json& all_workers, const StatusPageView& view) {
  json workers = json::array();
  long long live = 0;
  for (const auto& w : all_workers) {
    const bool is_live = w["live"].get<bool>();
    live += is_live ? 1 : 0;
    if (view.workers == "all" || (view.workers == "live") == is_live) workers.push_back(w);
  }
  const long long total = static_cast<long long>(workers.size());
  const long long pages = std::max<long long>(1, (total + view.per_page - 1) / view.per_page);
  const int page = static_cast<int>(std::min<long long>(view.page, pages));
  const std::string counts[3][2] = {{"all", std::to_string(all_workers.size())}, {"live", std::to_string(live)},
                                    {"lost", std::to_string(static_cast<long long>(all_workers.size()) - live)}};
  std::string nav = "<p id=\"worker-pages\" class=\"muted\">show: ";
  for (const auto& [name, n] : counts) nav += view_link(view, name, 1, name + " (" + n + ")", name == view.workers) + " ";
  nav += "&middot; page " + std::to_string(page) + " of " + std::to_string(pages);
  if (page > 1) nav += " " + view_link(view, view.workers, page - 1, "&larr; previous", false);
  if (page < pages) nav += " " + view_link(view, view.workers, page + 1, "next &rarr;", false);
  nav += "</p>";
  std::string html = "<h2>Workers</h2>" + nav + "<table id=\"workers\"><tr><th>worker</th><th>state</th><th>GPU</th><th>GPUs</th>"
                     "<th>queues</th><th>last seen</th><th>device health</th></tr>";
  if (workers.empty()) html += "<tr><td colspan=\"7\" class=\"muted\">no worker here</td></tr>";
  const auto first = static_cast<std::size_t>(page - 1) * static_cast<std::size_t>(view.per_page);
  for (std::size_t i = first; i < workers.size() && i < first + static_cast<std::size_t>(view.per_page); ++i) {
    const auto& w = workers[i];
    const std::string state = w["live"].get<bool>() ? w["state"].get<std::string>() : "lost";
    std::string queues;
    for (const auto& q : w["queues"]) queues += (queues.empty() ? "" : ", ") + escape(text_of(q));
    html += "<tr data-worker=\"" + escape(w["id"].get<std::string>()) + "\">" + cell(escape(w["id"].get<std::string>()), "mono") +
            cell("<span class=\"pill " + state + "\">" + state + "</span>") + cell(escape(w["gpu_type"].get<std::string>())) +
            gpu_bar(w["gpus_in_use"].get<long long>(), w["gpus_total"].get<long long>()) + cell(queues) +
            cell(age(w["last_seen_age_s"].get<double>())) + health_cell(w.value("unhealthy_devices", json::array())) + "</tr>";
  }
  return html + "</table>";
}

std::string queues_table(const json& queues) {
  std::string html = "<h2>Queues</h2><table id=\"queues\"><tr><th>queue</th><th>status</th>";
  for (const char* h : {"available", "active", "delayed", "dead letter", "completed", "GPUs in use / budget", "preemptions"})
    html += std::string("<th class=\"n\">") + h + "</th>";
  html += "</tr>";
  if (queues.empty()) html += "<tr><td colspan=\"9\" class=\"muted\">no queues yet</td></tr>";
  for (const auto& q : queues) {
    const auto& c = q["counts"];
    const bool paused = q["paused"].get<bool>();
    std::string budget = q["gpus_in_use"].dump() + " / " +
                         (q["budget"].contains("max_total_gpus") ? q["budget"]["max_total_gpus"].dump() : std::string("&infin;"));
    if (q["budget"].contains("max_concurrent_gpu_jobs"))
      budget += " <span class=\"muted\">(" + q["gpu_jobs_running"].dump() + " / " + q["budget"]["max_concurrent_gpu_jobs"].dump() + " jobs)</span>";
    if (q.contains("cohort")) {  // a cohort member: the share it may hold now, and what it lent or borrowed
      const auto& co = q["cohort"];
      budget += " <span class=\"muted\">(cohort " + escape(co["name"].get<std::string>()) + ": share " + co["share_gpus"].dump() +
                ", lent " + co["lent_gpus"].dump() + ", borrowed " + co["borrowed_gpus"].dump() + ")</span>";
    }
    html += "<tr>" + cell(escape(q["name"].get<std::string>()), "mono") +
            cell(std::string("<span class=\"pill") + (paused ? " paused\">paused" : "\">active") + "</span>") +
            num(c.value("available", json(0))) + num(c.value("active", json(0))) + num(c.value("delayed", json(0))) +
            num(c.value("dead_letter", json(0))) + num(c.value("completed", json(0))) + cell(budget, "n") + num(q["preemptions"]) + "</tr>";
  }
  return html + "</table>";
}

std::string waiting_table(const json& queues) {
  std::string rows;
  for (const auto& q : queues)
    for (const auto& c : q["classes"]) {
      if (c["waiting"].get<long long>() <= 0) continue;
      rows += "<tr>" + cell(escape(q["name"].get<std::string>()), "mono") + cell(escape(c["class"].get<std::string>()), "mono") +
              num(c["waiting"]) + cell(escape(requirements_text(c["requirements"]))) +
              cell(escape(c["message"].get<std::string>()), "why") + "</tr>";
    }
  if (rows.empty()) rows = "<tr><td colspan=\"5\" class=\"muted\">nothing is waiting</td></tr>";
  return "<h2>Waiting jobs, by requirement class</h2><table id=\"waiting\"><tr><th>queue</th><th>class</th><th class=\"n\">waiting</th>"
         "<th>needs</th><th>why it waits</th></tr>" +
         rows + "</table>";
}

// The running elastic gangs: the members each runs with now, and the range it may
// run at (it starts at min_size and grows toward max_size). Left out where none runs.
std::string elastic_gangs_table(const json& queues) {
  std::string rows;
  for (const auto& q : queues)
    for (const auto& g : q.value("elastic_gangs", json::array()))
      rows += "<tr data-job=\"" + escape(text_of(g["job_id"])) + "\">" + cell(escape(q["name"].get<std::string>()), "mono") +
              cell(escape(text_of(g["job_id"])), "mono") + cell(escape(text_of(g["type"]))) + num(g["size"]) +
              cell(g["min_size"].dump() + " &ndash; " + g["max_size"].dump(), "n") + num(g["generation"]) + "</tr>";
  if (rows.empty()) return {};
  return "<h2>Elastic gangs</h2><table id=\"elastic-gangs\"><tr><th>queue</th><th>job</th><th>type</th>"
         "<th class=\"n\">members now</th><th class=\"n\">target (min &ndash; max)</th><th class=\"n\">generation</th></tr>" +
         rows + "</table>";
}

std::string card(const std::string& value, const char* label) {
  return "<div class=\"card\"><b>" + value + "</b><span>" + label + "</span></div>";
}

}  // namespace

std::string render_status_page(const json& overview, const StatusPageView& view) {
  const auto& t = overview["totals"];
  long long available = 0, active = 0;
  for (const auto& q : overview["queues"]) {
    available += q["counts"].value("available", 0LL);
    active += q["counts"].value("active", 0LL);
  }
  std::string html = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                     "<meta http-equiv=\"refresh\" content=\"" + std::to_string(kRefreshSeconds) + "\">"
                     "<title>OJS broker status</title><style>" + std::string(kStyle) + "</style></head><body>";
  html += "<header><h1>OJS broker status</h1><span>read-only &middot; " + escape(overview["generated_at"].get<std::string>()) +
          " &middot; refreshes every " + std::to_string(kRefreshSeconds) +
          " s &middot; <a style=\"color:#aab2c0\" href=\"/ojs/v1/admin/overview\">JSON</a> &middot; "
          "<a style=\"color:#aab2c0\" href=\"/metrics\">metrics</a></span></header><main>";
  html += "<div class=\"cards\">" + card(t["workers_live"].dump() + " / " + t["workers"].dump(), "workers live") +
          card(t["gpus_in_use"].dump() + " / " + t["gpus_advertised"].dump(), "GPUs in use") +
          card(std::to_string(available), "jobs available") + card(std::to_string(active), "jobs active") + "</div>";
  html += workers_table(overview["workers"], view) + queues_table(overview["queues"]) + waiting_table(overview["queues"]) +
          elastic_gangs_table(overview["queues"]);
  return html + "</main></body></html>";
}

}  // namespace ojs::broker::obs
