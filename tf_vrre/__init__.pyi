# The public API of tf_vrre: one line per name.  tf_vrre/__init__.py loads each name from the
# module named here on first use (lazy_loader.attach_stub); type checkers and IDEs read this file.

from .callbacks import Checkpoint as Checkpoint
from .callbacks import CSVLogger as CSVLogger
from .callbacks import EpochCSVLogger as EpochCSVLogger
from .callbacks import EpochProgress as EpochProgress
from .callbacks import HyperparameterScheduler as HyperparameterScheduler
from .callbacks import LadderTuner as LadderTuner
from .callbacks import SampleCollector as SampleCollector
from .callbacks import SwapLogger as SwapLogger
from .diagnostics import to_inference_data as to_inference_data
from .errors import TfVrreError as TfVrreError
from .runs.ownership import RunMismatchError as RunMismatchError
from .runs.samples import SampleSet as SampleSet
from .runs.samples import load_samples as load_samples
from .sampler.invariants import DivergenceError as DivergenceError
from .sampler.invariants import InvariantError as InvariantError
from .sampler.invariants import SamplerError as SamplerError
from .sampler.replica_exchange import ReplicaExchangeSampler as ReplicaExchangeSampler
from .serving.export import export_ensemble as export_ensemble
from .sgmcmc.control_variates import ControlVariates as ControlVariates
from .sgmcmc.energy import gaussian_nll as gaussian_nll
from .sgmcmc.proposal import ProposedLadder as ProposedLadder
from .sgmcmc.schedules import CyclicalCosine as CyclicalCosine
from .sgmcmc.schedules import EpochExponential as EpochExponential
from .sgmcmc.schedules import Scaled as Scaled
from .sgmcmc.schedules import paper_cifar_schedules as paper_cifar_schedules
from .sgmcmc.swaps import CorrectedSwap as CorrectedSwap
from .sgmcmc.swaps import SwapResults as SwapResults
from .workflows.image_classification.data import Augmentation as Augmentation
from .workflows.image_classification.data import Preprocessing as Preprocessing
from .workflows.image_classification.data import TrainingData as TrainingData
from .workflows.image_classification.evaluate import evaluate as evaluate
from .workflows.image_classification.train import train as train

__version__: str
KERAS_MODULES: tuple[str, ...]
