// All of kiln's nn layers, for models that use many of them.
#pragma once

#include "frontend/nn/Activation.h"
#include "frontend/nn/BatchNorm.h"
#include "frontend/nn/Conv2D.h"
#include "frontend/nn/Dense.h"
#include "frontend/nn/Dropout.h"
#include "frontend/nn/Embedding.h"
#include "frontend/nn/Flatten.h"
#include "frontend/nn/GRU.h"
#include "frontend/nn/Initializers.h"
#include "frontend/nn/LSTM.h"
#include "frontend/nn/LayerNorm.h"
#include "frontend/nn/MultiHeadAttention.h"
#include "frontend/nn/Pool2D.h"
#include "frontend/nn/Sequential.h"
