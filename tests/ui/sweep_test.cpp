// Sweeps in the GUI: the Sweep dialog counts the runs of its grid and says what is wrong with a
// bad batch size list; a sweep of a tiny model runs to its end through the window's run
// controller, each member an ordinary run; Stop leaves the sweep stopped with members planned and
// Resume finishes it without running done members again; the Sweeps tab shows a sweep's grid
// points and one chart series per mixed policy.
#include <QCheckBox>
#include <QDialogButtonBox>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableWidget>
#include <QTest>
#include <algorithm>
#include <cmath>

#include "app/store/sweeps.h"
#include "tests/ui/history_fixture.h"
#include "ui/charts/chart.h"
#include "ui/history/sweeps_view.h"
#include "ui/main_window.h"
#include "ui/run/live_view.h"
#include "ui/run/run_panel.h"
#include "ui/run/sweep_dialog.h"
#include "ui/run/sweep_runner.h"

namespace mixlab::ui {

namespace {

using history_testing::add_run;
using history_testing::finished;

int runs_tagged(store::RunStore& store, std::int64_t sweep_id) {
  int n = 0;
  const std::string tag = "sweep-" + std::to_string(sweep_id);
  for (const store::RunRecord& r : store.list_runs()) {
    if (std::find(r.tags.begin(), r.tags.end(), tag) != r.tags.end()) ++n;
  }
  return n;
}

}  // namespace

class SweepTest : public QObject {
  Q_OBJECT

 private:
  std::unique_ptr<store::testing::TempDir> dir_;
  std::unique_ptr<MainWindow> window_;

  std::filesystem::path db() const { return dir_->path() / "runs.sqlite"; }

  // The window's sweep of float32 and mixed_bfloat16 at batch sizes 8 and 16, once each.
  store::SweepSpec two_by_two() {
    SweepDialog dialog(sweep_base(*window_->run_panel(), window_->sweep_model_name()));
    dialog.precision_box(Policy::mixed_bfloat16)->setChecked(true);
    dialog.batch_sizes()->setText(QStringLiteral("8, 16"));
    return dialog.spec();
  }

  // Starts and waits for the sweep's end; its id, 0 on failure or timeout.
  template <typename Start>
  std::int64_t run_sweep(Start start, int timeout_ms = 120000) {
    QSignalSpy ended(window_->sweep_runner(), &SweepRunner::sweep_ended);
    if (!start()) return 0;
    if (ended.isEmpty() && !ended.wait(timeout_ms)) return 0;
    return ended.front().front().value<qint64>();
  }

 private slots:
  void initTestCase() { QSettings().clear(); }

  void init() {
    dir_ = std::make_unique<store::testing::TempDir>();
    window_ = std::make_unique<MainWindow>(db());
    store::testing::write_bytes(dir_->path() / "tiny.json", store::testing::kTinyModel);
    QVERIFY(window_->open_model(QString::fromStdString((dir_->path() / "tiny.json").string())));
    window_->run_panel()->set_dataset(QStringLiteral("synthetic"));
    window_->run_panel()->set_precision(Policy::float32);
    window_->run_panel()->set_batch_size(16);
    window_->run_panel()->set_steps(20);
    window_->show();
  }
  void cleanup() {
    window_.reset();
    dir_.reset();
  }

  void dialog_counts_runs_and_says_what_is_wrong() {
    SweepBase base;
    base.model = "tiny";
    base.settings = {{"steps", {"30"}}};
    base.batch_size = 32;
    SweepDialog dialog(base);
    QCOMPARE(dialog.member_count(), 1);
    QCOMPARE(dialog.count_label()->text(), QStringLiteral("1 run"));
    dialog.precision_box(Policy::mixed_float16)->setChecked(true);
    dialog.batch_sizes()->setText(QStringLiteral("32, 64, 128"));
    QCOMPARE(dialog.member_count(), 6);
    dialog.repeats()->setValue(2);
    QCOMPARE(dialog.member_count(), 12);
    QCOMPARE(dialog.count_label()->text(), QStringLiteral("12 runs"));
    // Another model doubles it.
    dialog.models()->item(1)->setCheckState(Qt::Checked);
    QCOMPARE(dialog.member_count(), 24);
    dialog.models()->item(1)->setCheckState(Qt::Unchecked);
    const store::SweepSpec spec = dialog.spec();
    QVERIFY(spec.models == std::vector<std::string>{"tiny"});
    QCOMPARE(spec.repeats, 2);

    auto* error = dialog.findChild<QLabel*>(QStringLiteral("error"));
    QVERIFY(error->isHidden());
    dialog.batch_sizes()->setText(QStringLiteral("32, sixty-four"));
    QCOMPARE(dialog.member_count(), 0);
    QVERIFY2(dialog.error().contains(QStringLiteral("batch-size")), qPrintable(dialog.error()));
    QVERIFY(dialog.error().contains(QStringLiteral("sixty-four")));
    QCOMPARE(error->text(), dialog.error());
    QVERIFY(!error->isHidden());
    QVERIFY(!dialog.findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok)->isEnabled());
    dialog.batch_sizes()->setText(QStringLiteral("32, 0"));
    QCOMPARE(dialog.member_count(), 0);
    QVERIFY(dialog.error().contains(QStringLiteral("batch-size")));
    dialog.batch_sizes()->setText(QStringLiteral("32, 64"));
    QCOMPARE(dialog.member_count(), 8);
    QVERIFY(error->isHidden());
  }

  void sweep_runs_every_member_through_the_window() {
    QVERIFY(window_->run_panel()->sweep_action()->isEnabled());
    // Neither the Sweep… button beside Start nor the Sweeps tab widens or heightens the window
    // (it must fit a 1366x768 screen).
    auto* sweep_button = window_->run_panel()->findChild<QPushButton*>(QStringLiteral("sweep"));
    QVERIFY(sweep_button != nullptr);
    const QSize panel = window_->run_panel()->minimumSizeHint();
    sweep_button->hide();
    QCOMPARE(window_->run_panel()->minimumSizeHint(), panel);
    sweep_button->show();
    const QSize sweeps = window_->sweeps_view()->minimumSizeHint();
    QVERIFY2(sweeps.width() <= 700 && sweeps.height() <= 500,
             qPrintable(QStringLiteral("%1x%2").arg(sweeps.width()).arg(sweeps.height())));
    QSignalSpy started(window_->feed(), &app::RunFeed::run_started);
    const std::int64_t id = run_sweep([this] { return window_->start_sweep(two_by_two()); });
    QVERIFY2(id != 0, qPrintable(window_->sweep_runner()->error()));
    QVERIFY(!window_->sweep_runner()->active());
    QCOMPARE(started.size(), 4);  // each member an ordinary run on the live charts
    QCOMPARE(qint64(window_->live_view()->run_id()),
             qint64(started.back().front().value<app::StartedRun>().run_id));

    store::RunStore store = store::RunStore::open(db());
    const store::SweepRecord sweep = *store::find_sweep(store, id);
    QCOMPARE(sweep.state, store::SweepState::finished);
    QCOMPARE(sweep.members.size(), std::size_t(4));
    QCOMPARE(sweep.count(store::MemberState::done), 4);
    QCOMPARE(store.list_runs().size(), std::size_t(4));
    QCOMPARE(runs_tagged(store, id), 4);
    for (const store::SweepMemberRecord& m : sweep.members) {
      QVERIFY(m.run_id.has_value());
      const store::RunRecord run = store.run(*m.run_id);
      QCOMPARE(run.uid, m.run_uid);
      QCOMPARE(run.status, store::RecordStatus::finished);
      QCOMPARE(run.config.steps, std::int64_t(20));
      const store::SweepMember member = store::parse_sweep_member(m.settings_json);
      QCOMPARE(std::to_string(run.config.batch_size), member.value("batch-size"));
      QCOMPARE(std::string(to_string(run.config.precision)), member.value("precision"));
    }
    // The Sweeps tab shows it.
    window_->tabs()->setCurrentWidget(window_->sweeps_view());
    QCOMPARE(window_->sweeps_view()->sweep_table()->rowCount(), 1);
    QCOMPARE(window_->sweeps_view()->point_table()->rowCount(), 4);
  }

  void stop_leaves_members_planned_and_resume_runs_only_those() {
    // Runs of about half a second: Stop reaches the second one as it starts.
    window_->run_panel()->set_steps(15000);
    QMetaObject::Connection stopper;
    stopper = connect(window_->feed(), &app::RunFeed::run_started, this,
                      [this, &stopper, n = 0](const app::StartedRun&) mutable {
                        if (++n < 2) return;
                        disconnect(stopper);
                        window_->run_panel()->stop_action()->trigger();
                      });
    const std::int64_t id = run_sweep([this] { return window_->start_sweep(two_by_two()); });
    QVERIFY(id != 0);
    disconnect(stopper);
    store::RunStore store = store::RunStore::open(db());
    store::SweepRecord sweep = *store::find_sweep(store, id);
    QCOMPARE(sweep.state, store::SweepState::stopped);
    QCOMPARE(sweep.count(store::MemberState::done), 1);
    QCOMPARE(sweep.count(store::MemberState::planned), 3);  // the second one back to planned
    const std::optional<std::int64_t> first_run = sweep.members[0].run_id;
    QVERIFY(first_run.has_value());
    QVERIFY(sweep.members[1].run_id.has_value());
    QCOMPARE(store.run(*sweep.members[1].run_id).status, store::RecordStatus::stopped);
    QCOMPARE(store.list_runs().size(), std::size_t(2));

    // The Sweeps tab offers Resume; it runs the planned members only.
    window_->tabs()->setCurrentWidget(window_->sweeps_view());
    window_->sweeps_view()->select_sweep(id);
    QPushButton* resume = window_->sweeps_view()->resume_button();
    QVERIFY(resume->isEnabled());
    const std::int64_t resumed = run_sweep([resume] {
      resume->click();
      return true;
    });
    QCOMPARE(resumed, id);
    sweep = *store::find_sweep(store, id);
    QCOMPARE(sweep.state, store::SweepState::finished);
    QCOMPARE(sweep.count(store::MemberState::done), 4);
    QCOMPARE(*sweep.members[0].run_id, *first_run);      // not run again
    QCOMPARE(store.list_runs().size(), std::size_t(5));  // 2 before, the 3 members planned
    QVERIFY(!window_->sweeps_view()->resume_button()->isEnabled());
  }

  void sweeps_view_shows_points_and_a_series_per_mixed_policy() {
    // A sweep recorded by hand: 3 policies x 2 batch sizes, its runs measured.
    store::SweepSpec spec;
    spec.models = {"tiny"};
    spec.settings = {{"precision", {"float32", "mixed_float16", "mixed_bfloat16"}},
                     {"batch-size", {"32", "64"}}};
    store::RunStore store = store::RunStore::open(db());
    const std::vector<store::SweepMember> members = store::plan_sweep(spec);
    const std::int64_t id = store::insert_sweep(store, store::planned_sweep(spec));
    for (const store::SweepMember& m : members) {
      store::RunRecord run = store::testing::sample_run("member");
      run.config.precision = *parse_policy(m.value("precision"));
      run.config.batch_size = std::stoi(m.value("batch-size"));
      const double ms = run.config.precision == Policy::float32 ? 10.0 : 5.0;
      const std::int64_t run_id = add_run(store, run, finished(20, ms));
      store::set_member(store, id, m.index, store::MemberState::done, run_id, "");
    }
    store::set_sweep_state(store, id, store::SweepState::finished, "");

    SweepsView view(db());
    view.resize(1000, 600);
    view.show();
    view.reload();
    QCOMPARE(view.sweep_table()->rowCount(), 1);
    QCOMPARE(view.selected_sweep(), id);
    QCOMPARE(view.point_table()->rowCount(), 6);
    QCOMPARE(view.point_table()->item(0, 1)->text(), QStringLiteral("1/1"));
    // Plan order: float32 32, float32 64, mixed_float16 32, ...
    QCOMPARE(view.point_table()->item(1, 5)->text(), QStringLiteral("–"));
    QCOMPARE(view.point_table()->item(2, 5)->text(), QStringLiteral("2.00"));
    QVERIFY(!view.resume_button()->isEnabled());  // finished

    PlotChart* chart = view.chart();
    QCOMPARE(chart->series_count(), 3);
    QCOMPARE(chart->series_name(0), QStringLiteral("mixed_float16"));
    QCOMPARE(chart->series_name(1), QStringLiteral("mixed_bfloat16"));
    // The break-even line across the batch sizes.
    QCOMPARE(chart->points(2), (std::vector<QPointF>{QPointF(32, 1.0), QPointF(64, 1.0)}));
    for (int s = 0; s < 2; ++s) {
      QCOMPARE(chart->points(s).size(), std::size_t(2));
      QCOMPARE(chart->points(s)[0], QPointF(32, 2.0));
      QCOMPARE(chart->points(s)[1], QPointF(64, 2.0));
    }

    const std::filesystem::path csv = dir_->path() / "sweep.csv";
    QVERIFY(view.export_csv(csv));
    QVERIFY(std::filesystem::file_size(csv) > 0);
    const QString svg = QString::fromStdString((dir_->path() / "sweep.svg").string());
    QVERIFY(view.export_chart(svg));
    QVERIFY(std::filesystem::file_size(svg.toStdString()) > 0);
  }
};

}  // namespace mixlab::ui

QTEST_MAIN(mixlab::ui::SweepTest)
#include "sweep_test.moc"
