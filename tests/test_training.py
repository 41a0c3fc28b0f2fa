"""Training: presets and config errors, the learning-rate schedule, an end-to-end run, early stopping, averaging."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from data.case_markup import MARK
from data.corpus import Pair, ReadReport
from data.tokenizer import Tokenizer
from lab.page.direction import Languages, languages
from model.config import ConfigError, ModelConfig
from model.run_dir import EVALUATING_FILE, train_links_file
from training.distributed import Env
from training.prepare import load_and_split, model_data
from training.train import main
from training.train_config import OptimConfig, load_train_config, read_saved_config
from training.trainer import dev_scores, lr_at
from translate.translator import Translator

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


def records(run_dir: Path, kind: str) -> list[dict]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["kind"] == kind]


# ------------------------------------------------------------------------------------------- configuration


@pytest.mark.parametrize("preset", ["tiny", "small", "base"])
def test_presets_load_and_build_a_valid_model_config(preset: str) -> None:
    config = load_train_config(CONFIGS / f"{preset}.toml")
    assert isinstance(config.model, ModelConfig) and config.model.src_vocab_size == 0  # filled from the tokenizer
    assert config.model.d_model % config.model.n_heads == 0


def test_a_bad_model_shape_fails_before_any_data_is_read(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """--model.n_heads=5 used to fail only after SentencePiece was trained, with a traceback."""
    out = tmp_path / "run"
    code = main(
        [
            "--config",
            str(CONFIGS / "tiny.toml"),
            "--corpus",
            str(tmp_path / "missing.tsv"),
            "--out",
            str(out),
            "--model.n_heads=5",
        ]
    )
    assert code == 2 and not out.exists()  # the corpus does not even exist: the config was checked first
    assert "model.n_heads" in capsys.readouterr().err


def test_base_preset_is_the_paper_base_model_for_gpus() -> None:
    config = load_train_config(CONFIGS / "base.toml")
    m = config.model
    assert (m.d_model, m.n_heads, m.d_ff, m.n_encoder_layers, m.n_decoder_layers) == (512, 8, 2048, 6, 6)
    assert config.run.device == "auto" and config.run.precision == "auto"
    assert config.optim.max_tokens > load_train_config(CONFIGS / "small.toml").optim.max_tokens


@pytest.mark.parametrize(
    ("toml", "named"),
    [
        ("[optim]\nlrr = 0.1\n", "optim.lrr"),  # unknown key
        ("[optimizer]\nlr = 0.1\n", "optimizer"),  # unknown section
        ('[optim]\nlr = "fast"\n', "optim.lr"),  # wrong type
        ("[run]\neval_every = 1.5\n", "run.eval_every"),  # float for an int
        ("[run]\ncompile = 1\n", "run.compile"),  # int for a bool
        ('[model]\nnorm = "middle"\n', "model.norm"),  # not one of the choices
        ("[run]\neval_every = 0\n", "run.eval_every"),  # out of range
        ("optim = 3\n", "optim"),  # a value where a section belongs
    ],
)
def test_bad_toml_values_are_errors_naming_file_and_key(tmp_path: Path, toml: str, named: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError) as err:
        load_train_config(path)
    assert named in str(err.value) and str(path) in str(err.value)


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ("optim.lrr=0.1", "optim.lrr"),
        ("optimizer.lr=0.1", "optimizer"),
        ("optim.lr=fast", "optim.lr"),
        ("run.eval_every=often", "run.eval_every"),
        ("run.eval_every=true", "run.eval_every"),
        ("optim.betas=0.9", "optim.betas"),
        ("optim=3", "optim"),  # no key
        ("data.tgt_lang=es", "data.tgt_lang"),  # the corpus pair names one language twice
        ("data.src_lang=", "data.src_lang"),
        ("data.columns=['fr', 'en']", "data.columns"),  # columns that do not name data.src_lang
        ("data.reverse=yes", "data.reverse"),
    ],
)
def test_bad_overrides_are_errors_naming_the_key(override: str, named: str) -> None:
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        load_train_config(CONFIGS / "tiny.toml", [override])


def test_a_saved_config_with_retired_keys_still_loads_and_a_preset_with_them_is_refused(tmp_path: Path) -> None:
    saved = json.loads((Path("checkpoints/es-en") / "train_config.json").read_text())
    saved["data"] |= {"distilled": "runs/distill/train.v8.tsv", "mix": "both"}  # what v10 and v12 were trained with
    (tmp_path / "train_config.json").write_text(json.dumps(saved))
    config = read_saved_config(tmp_path / "train_config.json")
    assert config.data.corpora == tuple(saved["data"]["corpora"]) and model_data(tmp_path) == config.data
    (tmp_path / "preset.toml").write_text('[data]\nmix = "both"\n')
    with pytest.raises(ConfigError, match=r"data\.mix"):
        load_train_config(tmp_path / "preset.toml")


def test_overrides_are_typed_and_win_over_the_preset() -> None:
    config = load_train_config(CONFIGS / "tiny.toml", ["optim.lr=5e-4", "optim.betas=[0.9, 0.99]", "run.device=cpu"])
    assert config.optim.lr == 5e-4 and config.optim.betas == (0.9, 0.99) and config.run.device == "cpu"
    assert load_train_config(CONFIGS / "tiny.toml", ["optim.lr=1"]).optim.lr == 1.0  # int widens to float


def test_missing_and_invalid_toml_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_train_config(tmp_path / "nope.toml")
    (tmp_path / "broken.toml").write_text("[optim\nlr = 1")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_train_config(tmp_path / "broken.toml")


def test_cli_reports_config_errors_with_exit_code_2(
    tmp_path: Path, toy_corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert (
        main(
            [
                "--config",
                str(CONFIGS / "tiny.toml"),
                "--corpus",
                str(toy_corpus),
                "--out",
                str(out),
                "--optim.warmup=10",
            ]
        )
        == 2
    )
    assert "optim.warmup" in capsys.readouterr().err
    assert not out.exists()
    with pytest.raises(SystemExit) as exit_info:
        main(["--out", str(out), "stray"])
    assert exit_info.value.code == 2
    assert main(["--out", str(out), "--resume"]) == 2
    assert "train_state.pt" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------- schedule


def test_learning_rate_warms_up_linearly_then_decays() -> None:
    for schedule in ("inverse_sqrt", "cosine", "constant"):
        optim = OptimConfig(lr=1e-3, warmup_steps=10, max_steps=100, schedule=schedule, min_lr_ratio=0.1)
        rates = [lr_at(step, optim) for step in range(1, 101)]
        assert rates[:10] == pytest.approx([1e-3 * s / 10 for s in range(1, 11)])
        assert all(a >= b for a, b in itertools.pairwise(rates[9:]))
    assert lr_at(40, OptimConfig(lr=1e-3, warmup_steps=10)) == pytest.approx(1e-3 * math.sqrt(10 / 40))
    cosine = OptimConfig(lr=1e-3, warmup_steps=10, max_steps=100, schedule="cosine", min_lr_ratio=0.1)
    assert lr_at(100, cosine) == pytest.approx(1e-4)


# ------------------------------------------------------------------------------------------- end to end


def test_tiny_run_learns_the_toy_language(tiny_model_dir: Path) -> None:
    """The loss falls below what any model that ignores the source could reach.

    A toy target "The <colour> <noun> <number>." draws colour (5), noun (5) and number (20) uniformly, so a
    model blind to the source needs at least ln(5·5·20) = ln 500 nats per sentence on average; a dev NLL under
    that, per target token, proves the model reads the Spanish.
    """
    train, evals = records(tiny_model_dir, "train"), records(tiny_model_dir, "eval")
    assert train and evals and evals[-1]["step"] == train[-1]["step"] == train[-1]["max_steps"]
    assert [r["step"] for r in train[:6]] == [1, 2, 4, 8, 10, 20]  # known from the first step, then every log_every
    done = [r["epochs_done"] for r in train]  # a fraction of the epochs, for the epochs limit's progress
    assert done == sorted(done) and 0 < done[0] < 1
    assert all(r["epoch"] <= r["epochs_done"] <= r["epoch"] + 1 for r in train)
    assert train[-1]["loss"] < train[0]["loss"] / 3
    tokenizer = Tokenizer.load(tiny_model_dir)
    dev = (tiny_model_dir / "splits" / "dev.tsv").read_text().splitlines()
    tokens_per_sentence = sum(len(tokenizer.encode_tgt(line.split("\t")[1])) for line in dev) / len(dev)
    assert evals[-1]["dev_loss"] < math.log(500) / tokens_per_sentence
    assert all(0 <= r["dev_bleu"] <= 100 for r in evals) and evals[-1]["dev_bleu"] > 0


def test_run_directory_is_complete_and_consistent(tiny_model_dir: Path) -> None:
    report = json.loads((tiny_model_dir / "data_report.json").read_text())
    sizes = {
        name: len((tiny_model_dir / "splits" / f"{name}.tsv").read_text().splitlines())
        for name in ("train", "dev", "test")
    }
    assert report["splits"] == sizes
    assert report["kept"] == sum(sizes.values())
    assert report["read"] == 400 == report["kept"] + sum(report["skipped"].values())
    result = json.loads((tiny_model_dir / "metrics.json").read_text())
    assert result["final"] in result["dev_loss"]
    assert result["test_greedy"]["sentences"] == sizes["test"]
    assert len((tiny_model_dir / "test.hyp").read_text().splitlines()) == sizes["test"]
    assert result["test_greedy"]["bleu_signature"].startswith("nrefs:1")
    translator = Translator.load(tiny_model_dir)
    assert translator.translate("El perro azul 7.").text.strip()


def test_reverse_trains_the_other_direction_and_the_model_directory_says_so(tmp_path: Path, toy_corpus: Path) -> None:
    """--data.reverse=true on a Spanish<TAB>English file: the same split, swapped; the model is English→Spanish."""
    english = {line.split("\t")[1] for line in toy_corpus.read_text(encoding="utf-8").splitlines()}
    config = load_train_config(CONFIGS / "tiny.toml", [f"data.corpora=['{toy_corpus}']"])
    forward = load_and_split(config.data, ReadReport())
    out = tmp_path / "en-es"
    assert main(tiny(toy_corpus, out, "--data.reverse=true", "--optim.max_steps=2", "--run.eval_every=2")) == 0
    for name in ("train", "dev", "test"):
        rows = [tuple(line.split("\t")) for line in (out / "splits" / f"{name}.tsv").read_text().splitlines()]
        assert rows and rows == [(p.tgt, p.src) for p in getattr(forward, name)]
        assert all(src in english for src, _ in rows)  # the source column is the file's second (English) one
    assert languages(out) == Languages("en", "es", "English", "Spanish")
    saved = json.loads((out / "train_config.json").read_text())["data"]
    assert (saved["src_lang"], saved["tgt_lang"], saved["reverse"]) == ("es", "en", True)  # the corpus, as read
    assert load_train_config(None, ["data.reverse=true", "data.src_lang=pt"]).data.direction == ("en", "pt")


# ------------------------------------------------------------------------------------------- stopping, saving


def tiny(corpus: Path, out: Path, *overrides: str) -> list[str]:
    return [
        "--config",
        str(CONFIGS / "tiny.toml"),
        "--corpus",
        str(corpus),
        "--out",
        str(out),
        "--run.dev_bleu_sentences=0",
        *overrides,
    ]


def test_early_stopping_after_patience_evaluations_without_improvement(tmp_path: Path, toy_corpus: Path) -> None:
    """With lr = 0 the dev loss never improves after the first evaluation: patience 2 stops at the third."""
    out = tmp_path / "run"
    assert (
        main(tiny(toy_corpus, out, "--optim.lr=0", "--optim.max_steps=100", "--run.eval_every=5", "--run.patience=2"))
        == 0
    )
    assert [r["step"] for r in records(out, "eval")] == [5, 10, 15]
    assert max(r["step"] for r in records(out, "train")) == 15
    assert torch.load(out / "train_state.pt", weights_only=True)["progress"]["step"] == 15


def test_save_every_and_checkpoint_averaging(tmp_path: Path, toy_corpus: Path) -> None:
    out = tmp_path / "run"
    assert (
        main(
            tiny(
                toy_corpus,
                out,
                "--optim.max_steps=12",
                "--run.eval_every=10",
                "--run.save_every=4",
                "--run.average_last=2",
            )
        )
        == 0
    )
    assert [p.name for p in sorted((out / "checkpoints").iterdir())] == ["step-0000004", "step-0000008", "step-0000012"]
    assert [r["step"] for r in records(out, "eval")] == [10, 12]  # every 10 and at the end
    last_two = [load_file(str(out / "checkpoints" / f"step-00000{s:02d}" / "model.safetensors")) for s in (8, 12)]
    averaged = load_file(str(out / "averaged" / "model.safetensors"))
    assert averaged.keys() == last_two[0].keys()
    for name, tensor in averaged.items():
        assert torch.allclose(tensor, (last_two[0][name] + last_two[1][name]) / 2, atol=1e-7), name
    result = json.loads((out / "metrics.json").read_text())
    assert set(result["dev_loss"]) == {"best", "averaged"}
    assert result["final"] == min(result["dev_loss"], key=result["dev_loss"].get)
    final = load_file(str(out / "model.safetensors"))
    chosen = load_file(str(out / result["final"] / "model.safetensors"))
    assert all(torch.equal(final[name], chosen[name]) for name in final)


def test_a_new_run_refuses_a_directory_holding_a_run(
    tmp_path: Path, toy_corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(tiny(toy_corpus, out, "--optim.max_steps=4", "--run.eval_every=4")) == 0
    assert main(tiny(toy_corpus, out, "--optim.max_steps=4")) == 2
    assert "--resume" in capsys.readouterr().err
    assert main(["--out", str(out), "--resume", "--model.d_model=64"]) == 2
    assert "model.d_model" in capsys.readouterr().err
    # Resuming with a larger step limit continues the same run and its log.
    assert main(["--out", str(out), "--resume", "--optim.max_steps=8"]) == 0
    assert [r["step"] for r in records(out, "eval")] == [4, 8]


def test_resuming_a_finished_run_takes_no_step(tmp_path: Path, toy_corpus: Path) -> None:
    out = tmp_path / "run"
    assert main(tiny(toy_corpus, out, "--optim.max_steps=6", "--run.eval_every=3")) == 0
    before = load_file(str(out / "model.safetensors"))
    assert main(["--out", str(out), "--resume"]) == 0
    assert torch.load(out / "train_state.pt", weights_only=True)["progress"]["step"] == 6
    after = load_file(str(out / "model.safetensors"))
    assert all(torch.equal(before[name], after[name]) for name in before)
    assert [r["step"] for r in records(out, "eval")] == [3, 6]


def test_python_m_training_lists_and_dispatches_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from training.__main__ import main as dispatch

    assert dispatch([]) == 0 and "evaluate" in capsys.readouterr().out
    assert dispatch(["fly"]) == 2 and "unknown command 'fly'" in capsys.readouterr().err
    assert dispatch(["train", "--out", str(tmp_path / "run"), "--resume"]) == 2
    assert "train_state.pt" in capsys.readouterr().err


def test_cosine_with_a_minutes_budget_follows_wall_clock_time() -> None:
    """With max_minutes the cosine decay ends when the budget does, even if max_steps is far away."""
    from training.progress import Progress, time_budget_progress

    optim = OptimConfig(lr=1e-3, warmup_steps=10, schedule="cosine", max_steps=10_000, max_minutes=10.0)
    during_warmup = Progress(step=5, elapsed=30.0)
    assert time_budget_progress(during_warmup, optim) == 0.0
    halfway = Progress(step=50, elapsed=60.0 + 270.0, warmup_elapsed=60.0)  # 270 of the 540 s after warmup
    assert time_budget_progress(halfway, optim) == pytest.approx(0.5)
    assert lr_at(50, optim, time_budget_progress(halfway, optim)) == pytest.approx(0.5e-3)
    spent = Progress(step=60, elapsed=700.0, warmup_elapsed=60.0)
    assert lr_at(60, optim, time_budget_progress(spent, optim)) == pytest.approx(0.0, abs=1e-12)
    assert time_budget_progress(halfway, OptimConfig(max_minutes=0.0)) == 0.0


def test_init_from_starts_with_the_parents_tokenizer_shape_and_weights(
    tmp_path: Path, toy_corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second run started from a model directory: at lr 0 it evaluates exactly like its parent."""
    parent = tmp_path / "parent"
    assert main(tiny(toy_corpus, parent, "--optim.max_steps=20", "--run.eval_every=20")) == 0
    child = tmp_path / "child"
    assert main(tiny(toy_corpus, child, "--init-from", str(parent), "--optim.lr=0", "--optim.max_steps=5")) == 0
    assert (child / "spm.model").read_bytes() == (parent / "spm.model").read_bytes()
    assert ModelConfig.from_json_file(child / "config.json") == ModelConfig.from_json_file(parent / "config.json")
    assert records(child, "eval")[-1]["dev_loss"] == pytest.approx(records(parent, "eval")[-1]["dev_loss"], abs=1e-5)
    assert torch.load(child / "train_state.pt", weights_only=True)["progress"]["step"] == 5  # counted afresh
    # The parent's shape wins; a --model.* override contradicting its weights is an error naming the key.
    assert main(tiny(toy_corpus, tmp_path / "bad", "--init-from", str(parent), "--model.d_model=64")) == 2
    assert "model.d_model" in capsys.readouterr().err
    assert main(tiny(toy_corpus, tmp_path / "bad2", "--init-from", str(tmp_path / "nowhere"))) == 2
    assert "nowhere" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------- guided alignment


def test_guided_alignment_writes_the_links_logs_its_loss_and_resumes(tmp_path: Path, toy_corpus: Path) -> None:
    """One head of the only decoder layer learns eflomal's links: its alignment loss falls (eflomal is not seeded,
    so only aggregates are checked); --resume reads the same links file."""
    pytest.importorskip("eflomal")
    out = tmp_path / "on"
    guided = ["--optim.guided_alignment.weight=1", "--optim.guided_alignment.layer=0", "--run.log_every=5"]
    assert main(tiny(toy_corpus, out, *guided, "--optim.max_steps=20", "--run.eval_every=20")) == 0
    train_pairs = (out / "splits" / "train.tsv").read_text().splitlines()
    lines = train_links_file(out).read_text().splitlines()
    assert len(lines) == len(train_pairs) and sum(bool(line) for line in lines) >= 0.95 * len(lines)
    align = [r["align_loss"] for r in records(out, "train")]
    assert len(align) == 7 and all(a >= 0 for a in align) and align[-1] < 0.85 * align[0]
    assert main(["--out", str(out), "--resume", "--optim.max_steps=25"]) == 0
    assert [r["step"] for r in records(out, "train") if "align_loss" in r] == [1, 2, 4, 5, 10, 15, 20, 25]


def test_guided_alignment_off_changes_nothing(tmp_path: Path, toy_corpus: Path) -> None:
    out = tmp_path / "off"
    assert main(tiny(toy_corpus, out, "--optim.max_steps=4", "--run.eval_every=4", "--run.log_every=2")) == 0
    assert not train_links_file(out).exists()
    assert all("align_loss" not in r for r in records(out, "train"))
    assert json.loads((out / "train_config.json").read_text())["optim"]["guided_alignment"]["weight"] == 0


def test_init_from_with_case_markup_adds_the_mark_to_the_parents_vocabulary(
    tmp_path: Path, toy_corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A parent without case markup, a child with it: one more piece, one more embedding row, the rest inherited
    (at lr 0 a sentence without a mark, lowercase and beginning with a number, gets the parent's translation)."""
    parent = tmp_path / "parent"
    assert main(tiny(toy_corpus, parent, "--optim.max_steps=20", "--run.eval_every=20")) == 0
    child = tmp_path / "child"
    marked = ["--init-from", str(parent), "--data.case_markup=true", "--optim.lr=0", "--optim.max_steps=5"]
    assert main(tiny(toy_corpus, child, *marked)) == 0
    before, after = Tokenizer.load(parent), Tokenizer.load(child)
    assert not before.case_markup and after.case_markup
    assert after.src.get_piece_size() == before.src.get_piece_size() + 1
    assert ModelConfig.from_json_file(child / "config.json").src_vocab_size == before.src.get_piece_size() + 1
    lower = [Translator.load(run).translate("3 gatos rojos.") for run in (parent, child)]
    assert lower[0].best.tokens == lower[1].best.tokens
    assert lower[1].best.log_prob < lower[0].best.log_prob  # the new piece takes some mass
    cased = Translator.load(child).translate("El gato rojo 3.")
    assert after.src.piece_to_id(MARK) in cased.src_ids
    # Its children must keep reading that way.
    assert main(tiny(toy_corpus, tmp_path / "bad", "--init-from", str(child))) == 2
    assert "data.case_markup" in capsys.readouterr().err


def test_the_result_names_the_kept_checkpoint_and_the_limit_that_stopped_training(tiny_model_dir: Path) -> None:
    from jobs.run_progress import kept_text

    result = json.loads((tiny_model_dir / "metrics.json").read_text())
    kept = result["kept"]
    assert result["stopped"] == "at the 300-step limit" and kept["last_step"] == 300
    assert kept["checkpoint"] == result["final"] and kept["dev_loss"] == min(result["dev_loss"].values())
    assert (0 < kept["best_step"] <= 300) if kept["checkpoint"] == "best" else kept["steps"][-1] == 300
    text = kept_text(tiny_model_dir)
    assert text.startswith("Kept the ") and text.endswith("Training stopped at the 300-step limit.")
    assert not (tiny_model_dir / EVALUATING_FILE).exists()  # no evaluation is running once training ended


def test_dev_bleu_reports_the_sentences_translated_batch_by_batch(tiny_model_dir: Path) -> None:
    translator = Translator.load(tiny_model_dir)
    pairs = [Pair("el gato rojo", "the red cat")] * 70
    told: list[tuple[int, int]] = []
    env = Env(torch.device("cpu"), 0, 1, None)
    dev_scores(translator.model, translator.tokenizer, pairs, env, lambda *how_far: told.append(how_far))
    assert told == [(64, 70), (70, 70)]
